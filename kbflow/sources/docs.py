"""Markdown / plain-text folders (or a single file): one raw unit per file."""

from __future__ import annotations

from collections.abc import Iterable

from kbflow import ids
from kbflow.languages import is_document, language_of
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import FileSetLoader, decode_detect, read_bytes, register_loader


@register_loader
class DocsLoader(FileSetLoader):
    """Markdown (``.md``, ``.markdown``, ``.mdx``), reStructuredText, ``.txt``, JSON/YAML/TOML files.

    Every file must be text (:func:`~kbflow.sources.base.decode_text`): an
    undecodable or binary file is reported as failed, naming the byte, and the
    others are loaded. Files over 4 MiB are left out (``--max-file-mb``).
    """

    name = "docs"
    description = "a folder (or one file) of Markdown / text documents"
    suffixes = (".md", ".markdown", ".mdx", ".rst", ".txt")
    what = "a Markdown/text file"
    plural = "Markdown/text files"
    hint = "check the path, or use --type repo for a code repository"
    max_file_mb = 4.0

    def accepts(self, rel: str) -> bool:
        return is_document(language_of(rel))

    def load_file(self, source: Source, rel: str, path: str) -> Iterable[RawUnit]:
        data = read_bytes(path)
        text, encoding = decode_detect(data, path)
        return [
            RawUnit(
                source_id=source.source_id,
                unit_key=rel,
                text=text,
                content_kind="doc",
                locator=Locator(kind="doc", path=rel, char_start=0, char_end=len(text), encoding=encoding),
                title=rel,
                file_hash=ids.bytes_hash(data),
                language=language_of(rel) or "text",
            )
        ]
