"""Markdown / plain-text folders (or a single file): one raw unit per file."""

from __future__ import annotations

import os
from typing import Iterator

from kbflow import ids
from kbflow.errors import SourceError
from kbflow.languages import is_document, language_of
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import Loader, decode_text, read_bytes, register_loader
from kbflow.sources.walk import walk_files


@register_loader
class DocsLoader(Loader):
    """Markdown (``.md``, ``.markdown``, ``.mdx``), reStructuredText and ``.txt`` files.

    Every file must be valid UTF-8: an undecodable file fails the source with an
    error naming it, rather than silently disappearing from the index.
    """

    name = "docs"
    description = "a folder (or one file) of Markdown / text documents"

    def check(self, uri: str) -> None:
        if not os.path.exists(uri):
            raise SourceError(f"{uri}: no such file or folder")
        if os.path.isfile(uri) and not is_document(language_of(uri)):
            raise SourceError(f"{uri}: not a Markdown/text file (.md, .markdown, .mdx, .rst, .txt)")

    def _files(self, uri: str) -> list[tuple[str, str]]:
        """(relative path, absolute path) of every document file, sorted."""
        if not os.path.exists(uri):
            raise SourceError(f"{uri}: no such file or folder (was it moved? re-add the source)")
        if os.path.isfile(uri):
            return [(os.path.basename(uri), uri)]
        files = [(rel, os.path.join(uri, rel)) for rel in walk_files(uri) if is_document(language_of(rel))]
        if not files:
            raise SourceError(
                f"{uri}: no Markdown/text files found (.md, .markdown, .mdx, .rst, .txt); "
                "check the path, or use --type repo for a code repository"
            )
        return files

    def fingerprint(self, source: Source) -> str:
        return ids.combine((rel, ids.bytes_hash(read_bytes(path))) for rel, path in self._files(source.uri))

    def load(self, source: Source) -> Iterator[RawUnit]:
        for rel, path in self._files(source.uri):
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
