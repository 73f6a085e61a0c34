"""Frozen, typed records: sources, raw units, chunks, locators and citations (hits: :mod:`.hits`)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

from kbflow import schema as S
from kbflow.errors import ConfigError, ResolveError
from kbflow.records import ids

__all__ = ["Chunk", "Citation", "Locator", "RawUnit", "Source", "StepResult"]

#: The locator fields each kind uses (docs/design.md, "Provenance").
LOCATOR_KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "pdf": ("path", "page", "page_label", "heading_path", "table", "bbox", "regions", "char_start", "char_end"),
    "web": ("url", "css_path", "heading_path", "char_start", "char_end"),
    "code": ("path", "line_start", "line_end", "symbol", "ast_path"),
    "doc": ("path", "heading_path", "char_start", "char_end"),
    "ticket": ("ticket_id", "comment_id", "char_start", "char_end"),
    "record": ("record_id", "field", "char_start", "char_end"),
}


class StepResult:
    """Mixin for the dataclasses a pipeline step returns: they round-trip through plain dicts
    (how the Dagster runner passes them through materialization metadata)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]  # a mixin: every subclass is a dataclass

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Any:
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]  # as above
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Locator:
    """Exactly where a chunk came from; precise enough to re-read it.

    ``kind`` selects which fields are meaningful (:data:`LOCATOR_KIND_FIELDS`);
    the others stay ``None``. Paths are relative to the source's root; lines
    are 1-based and inclusive; char offsets index the unit's text, end
    exclusive; PDF pages are 1-based and boxes are in PDF points.
    """

    kind: str
    path: str | None = None
    heading_path: str | None = None
    char_start: int | None = None
    char_end: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    symbol: str | None = None
    ast_path: str | None = None
    page: int | None = None
    page_label: str | None = None
    bbox: tuple[float, float, float, float] | None = None
    regions: tuple[tuple[int, tuple[float, float, float, float]], ...] | None = None
    table: int | None = None
    url: str | None = None
    css_path: str | None = None
    ticket_id: str | None = None
    comment_id: str | None = None
    record_id: str | None = None
    field: str | None = None
    #: the encoding a text file was decoded with where it is not UTF-8 (detected at load, re-used by resolve)
    encoding: str | None = None
    #: a scanned PDF page read by OCR: the engine's mean word confidence, 0-1 (``None``: read from its text layer)
    ocr_confidence: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in LOCATOR_KIND_FIELDS:
            raise ConfigError(f"unknown locator kind {self.kind!r}; known: {sorted(LOCATOR_KIND_FIELDS)}")

    def to_dict(self) -> dict[str, Any]:
        """``{"kind", ...}`` with the fields of this kind only (the ``--json`` shape)."""
        out: dict[str, Any] = {"kind": self.kind}
        for name in LOCATOR_KIND_FIELDS[self.kind]:
            value = getattr(self, name)
            if name == "bbox" and value is not None:
                value = list(value)
            elif name == "regions" and value is not None:
                value = [{"page": p, "bbox": list(b)} for p, b in value]
            out[name] = value
        if self.encoding is not None:
            out["encoding"] = self.encoding
        if self.ocr_confidence is not None:
            out["ocr"] = True
            out["ocr_confidence"] = self.ocr_confidence
        return out

    def to_row(self) -> dict[str, Any]:
        """Every field (the Arrow struct shape)."""
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.bbox is not None:
            row["bbox"] = list(self.bbox)
        if self.regions is not None:
            row["regions"] = [{"page": p, "bbox": list(b)} for p, b in self.regions]
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Locator:
        kwargs: dict[str, Any] = {f.name: row.get(f.name) for f in fields(cls)}
        if kwargs["bbox"] is not None:
            kwargs["bbox"] = tuple(kwargs["bbox"])
        if kwargs["regions"] is not None:
            kwargs["regions"] = tuple((r["page"], tuple(r["bbox"])) for r in kwargs["regions"])
        return cls(**kwargs)

    def replace(self, **changes: Any) -> Locator:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(changes)
        return Locator(**data)


@dataclass(frozen=True)
class Source:
    """A registered source: what to load, and (once ingested) its registry state.

    ``source_id`` is the partition key everywhere; ``uri`` is an absolute path
    for local sources; ``scope`` is a project id or ``"global"``.
    """

    source_id: str
    source_type: str
    uri: str
    scope: str = "global"
    title: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    content_hash: str | None = None
    status: str = "pending"
    chunk_count: int | None = None
    last_indexed: datetime | None = None
    last_error: str | None = None
    added_at: datetime | None = None
    #: what the last load left out or could not read: ``[{"path", "reason", "failed"}]``
    issues: tuple[Mapping[str, Any], ...] = ()
    #: the fingerprint of what ``documents`` holds (``content_hash`` is set once everything is indexed)
    loaded_hash: str | None = None

    @property
    def skipped(self) -> list[Mapping[str, Any]]:
        """Files left out by a rule (size limit, file type, ignore rules)."""
        return [i for i in self.issues if not i.get("failed")]

    @property
    def failed_files(self) -> list[Mapping[str, Any]]:
        """Files that could not be read (corrupt, encrypted, undecodable)."""
        return [i for i in self.issues if i.get("failed")]

    def to_dict(self) -> dict[str, Any]:
        """The source as JSON shows it everywhere (``kbflow add --json``, ``kbflow status --json``, REST, MCP):
        the registry row with its options as an object, times in ISO 8601, and the issues split into
        ``skipped`` and ``failed_files``."""
        row = asdict(self)
        row["options"] = dict(self.options)
        del row["issues"]
        row["skipped"] = [{"path": i["path"], "reason": i["reason"]} for i in self.skipped]
        row["failed_files"] = [{"path": i["path"], "reason": i["reason"]} for i in self.failed_files]
        for key in ("last_indexed", "added_at"):
            row[key] = row[key].isoformat() if row[key] else None
        return row

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["options"] = json.dumps(dict(self.options), sort_keys=True)
        row["issues"] = json.dumps([dict(i) for i in self.issues]) if self.issues else None
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Source:
        data = dict(row)
        data["options"] = json.loads(data.get("options") or "{}")
        data["issues"] = tuple(json.loads(data.get("issues") or "[]"))
        known: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls) if f.name in data}
        return cls(**known)


@dataclass(frozen=True)
class RawUnit:
    """One unit as loaded: a code file, a Markdown file, one JSONL record, a PDF page, a web page, a ticket post.

    ``unit_key`` names the unit's position within its source (a path, a record
    id); ``locator`` is the unit-level locator that chunkers refine.
    """

    source_id: str
    unit_key: str
    text: str
    content_kind: str
    locator: Locator
    title: str | None = None
    file_hash: str | None = None
    #: chunker hint: a language name for code ("python"), "markdown" for documents
    language: str | None = None
    #: the unit's layout as JSON where the loader has one: a PDF page's words with their
    #: boxes, a web page's blocks with their css paths (see :mod:`kbflow.chunk.layout`)
    layout: str | None = None

    @property
    def unit_hash(self) -> str:
        """Hash over the unit's key, kind, language, text, layout and title: changes when any of them does (a
        page whose ``<title>`` alone changed is chunked again: the title heads its chunks' context header)."""
        parts = [self.unit_key, self.content_kind, self.language or "", self.text]
        if self.layout is not None:
            parts.append(self.layout)
        if self.title is not None:
            parts.append(f"title\x00{self.title}")
        return ids.digest(*parts)

    def to_row(self) -> dict[str, Any]:
        """The unit as a ``documents`` row."""
        return {
            S.SOURCE_ID: self.source_id,
            S.UNIT_HASH: self.unit_hash,
            S.UNIT_KEY: self.unit_key,
            S.FILE_HASH: self.file_hash,
            S.CONTENT_KIND: self.content_kind,
            S.TITLE: self.title,
            S.TEXT: self.text,
            S.LOCATOR: self.locator.to_row(),
            S.LANGUAGE: self.language,
            S.LAYOUT: self.layout,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RawUnit:
        """The unit a ``documents`` row holds."""
        return cls(
            source_id=row[S.SOURCE_ID],
            unit_key=row[S.UNIT_KEY],
            text=row[S.TEXT],
            content_kind=row[S.CONTENT_KIND],
            locator=Locator.from_row(row[S.LOCATOR]),
            title=row[S.TITLE],
            file_hash=row[S.FILE_HASH],
            language=row[S.LANGUAGE],
            layout=row.get(S.LAYOUT),
        )


@dataclass(frozen=True)
class Chunk:
    """A piece of a unit's text with its exact locator.

    ``chunk_id`` is stable across re-ingests for as long as the text is
    unchanged: it is derived from the source, the unit key, the text hash and
    the occurrence of that text within the unit, not from line numbers.
    """

    chunk_id: str
    chunk_hash: str
    source_id: str
    unit_hash: str
    content_kind: str
    position: int
    text: str
    locator: Locator
    title: str | None = None
    #: the context header embedded and indexed with the text (:mod:`kbflow.chunk.context`), if any
    context: str | None = None

    @property
    def embed_text(self) -> str:
        """What is embedded and indexed for BM25: the context header, a line break, the text."""
        return f"{self.context}\n{self.text}" if self.context else self.text

    def to_row(self, source: Source, file_hash: str | None, chunker: str) -> dict[str, Any]:
        """The chunk as a ``chunks`` row of ``source``; ``row_hash`` changes when any stored field but the text does."""
        locator = self.locator.to_row()
        row = {
            S.CHUNK_ID: self.chunk_id,
            S.CHUNK_HASH: self.chunk_hash,
            S.SOURCE_ID: source.source_id,
            S.SOURCE_TYPE: source.source_type,
            S.SCOPE: source.scope,
            S.UNIT_HASH: self.unit_hash,
            S.CONTENT_KIND: self.content_kind,
            S.POSITION: self.position,
            S.TITLE: self.title,
            S.URI: source.uri,
            S.CONTENT_HASH: file_hash,
            S.TEXT: self.text,
            S.LOCATOR: locator,
            S.CHUNKER: chunker,
            S.CONTEXT: self.context,
            S.EMBED_HASH: ids.text_hash(self.embed_text),
        }
        hashed = (
            S.EMBED_HASH,
            S.CHUNK_ID,
            S.SOURCE_TYPE,
            S.SCOPE,
            S.UNIT_HASH,
            S.POSITION,
            S.TITLE,
            S.URI,
            S.CONTENT_HASH,
            S.CHUNKER,
        )
        row[S.ROW_HASH] = ids.digest(*(str(row[k]) for k in hashed), repr(sorted(locator.items())))
        return row


@dataclass(frozen=True)
class Citation:
    """Where a hit came from: the source and the exact locator within it."""

    source_id: str
    source_type: str
    uri: str
    locator: Locator
    title: str | None = None
    #: hash of the source file's bytes when it was indexed
    content_hash: str | None = None
    #: hash of the cited text as indexed (:func:`kbflow.records.ids.text_hash`): resolving checks against it
    chunk_hash: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Citation:
        """The citation of a ``chunks`` or search-table row (or a decoded ``hit`` payload)."""
        return cls(
            source_id=row[S.SOURCE_ID],
            source_type=row[S.SOURCE_TYPE],
            uri=row[S.URI],
            locator=Locator.from_row(row[S.LOCATOR]),
            title=row.get(S.TITLE),
            content_hash=row.get(S.CONTENT_HASH),
            chunk_hash=row.get(S.CHUNK_HASH),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Citation:
        """The citation of a :meth:`to_dict` object."""
        return cls(
            source_id=data["source_id"],
            source_type=data["source_type"],
            uri=data["uri"],
            locator=Locator.from_row(data["locator"]),
            title=data.get("title"),
            content_hash=data.get("content_hash"),
            chunk_hash=data.get("chunk_hash"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "source_type": self.source_type,
            "uri": self.uri,
            "title": self.title,
            "content_hash": self.content_hash,
            "chunk_hash": self.chunk_hash,
            "locator": self.locator.to_dict(),
            "label": self.label(),
        }

    def file_path(self) -> str:
        """The local file the cited text is in, as its real path: the source's uri where it names a file, else
        the locator's path under the source's folder (:class:`~kbflow.errors.ResolveError` when there is none).

        Raises :class:`~kbflow.errors.UnsafeFileError` when that file now leads outside its source (a symbolic
        link swapped in after ingest) or is no longer a regular file (:func:`kbflow.records.paths.confined_file`).
        """
        from kbflow.records.paths import confined_file

        if os.path.isfile(self.uri) or os.path.islink(self.uri):
            return confined_file(self.uri, self.uri)
        if not self.locator.path:
            raise ResolveError(f"citation of source {self.source_id!r} has no path")
        return confined_file(self.locator.path, self.uri)

    def label(self, limit: int = 120) -> str:
        """The line a person reads, at most ``limit`` characters: ``References and Borrowing § Mutable
        References``, ``report.pdf p.12``, ``kbflow/retrieve.py:40-88 Retriever.search`` (:mod:`kbflow.records.labels`).
        The full locator, for resolving, is :attr:`locator` (and :meth:`to_dict`)."""
        from kbflow.records.labels import citation_label

        return citation_label(self, limit)

    def render(self) -> str:
        """The same as :meth:`label` (what the CLI, the web page, ``--prompt`` and MCP show)."""
        return self.label()
