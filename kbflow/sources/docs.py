"""Markdown / plain-text folders (or a single file): one raw unit per file."""

from __future__ import annotations

from collections.abc import Iterator

from kbflow import ids
from kbflow.languages import is_document, language_of
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import FileSetLoader, decode_text, read_bytes, register_loader


@register_loader
class DocsLoader(FileSetLoader):
    """Markdown (``.md``, ``.markdown``, ``.mdx``), reStructuredText, ``.txt``, JSON/YAML/TOML files.

    Every file must be valid UTF-8: an undecodable file fails the source with an
    error naming it, rather than silently disappearing from the index.
    """

    name = "docs"
    description = "a folder (or one file) of Markdown / text documents"
    suffixes = (".md", ".markdown", ".mdx", ".rst", ".txt")
    what = "a Markdown/text file"
    plural = "Markdown/text files"
    hint = "check the path, or use --type repo for a code repository"

    def accepts(self, rel: str) -> bool:
        return is_document(language_of(rel))

    def load(self, source: Source) -> Iterator[RawUnit]:
        for rel, path in self.files(source.uri):
            data = read_bytes(path)
            text = decode_text(data, path)
            yield RawUnit(
                source_id=source.source_id,
                unit_key=rel,
                text=text,
                content_kind="doc",
                locator=Locator(kind="doc", path=rel, char_start=0, char_end=len(text)),
                title=rel,
                file_hash=ids.bytes_hash(data),
                language=language_of(rel) or "text",
            )
