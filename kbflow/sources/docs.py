"""Markdown / plain-text folders (or a single file): one raw unit per file; a Jupyter notebook's is its cells'
text (:mod:`kbflow.sources.notebook`)."""

from __future__ import annotations

from collections.abc import Iterable

from kbflow.records import Locator, RawUnit, Source, ids
from kbflow.sources.base import FileSetLoader, SkipFile, register_loader
from kbflow.sources.files import decode_detect, read_bytes
from kbflow.sources.notebook import is_notebook, notebook_text
from kbflow.sources.walk import format_size
from kbflow.text.languages import is_document, language_of


def notebook_unit(source: Source, rel: str, path: str, limit: int | None) -> list[RawUnit]:
    """The one document unit of the notebook at ``path`` (none when it has no text): its cells rendered as
    Markdown; a :class:`SkipFile` when that text is over ``limit`` bytes."""
    data = read_bytes(path)
    raw, encoding = decode_detect(data, path)
    text = notebook_text(raw, path)
    size = len(text.encode("utf-8"))
    if limit is not None and size > limit:
        limit_text = format_size(limit)
        raise SkipFile(
            f"its cells' text ({format_size(size)}) is over the {limit_text} limit; raise it with --max-file-mb"
        )
    return [_unit(source, rel, data, text, encoding, "markdown")] if text.strip() else []


def _unit(source: Source, rel: str, data: bytes, text: str, encoding: str | None, language: str) -> RawUnit:
    """The one document unit of a file whose bytes are ``data`` and whose text is ``text``."""
    return RawUnit(
        source_id=source.source_id,
        unit_key=rel,
        text=text,
        content_kind="doc",
        locator=Locator(kind="doc", path=rel, char_start=0, char_end=len(text), encoding=encoding),
        title=rel,
        file_hash=ids.bytes_hash(data),
        language=language,
    )


@register_loader
class DocsLoader(FileSetLoader):
    """Markdown (``.md``, ``.markdown``, ``.mdx``; R Markdown and Quarto's ``.rmd``, ``.qmd``),
    reStructuredText, AsciiDoc (``.adoc``), ``.txt``, JSON/YAML/TOML files, and Jupyter notebooks (``.ipynb``,
    read as their cells' text).

    Every file must be text (:func:`~kbflow.sources.files.decode_text`): an
    undecodable or binary file is reported as failed, naming the byte, and the
    others are loaded. Files over 4 MiB are left out (``--max-file-mb``).
    """

    name = "docs"
    description = "a folder (or one file) of Markdown / text documents"
    suffixes = (".md", ".markdown", ".mdx", ".rmd", ".qmd", ".rst", ".adoc", ".asciidoc", ".txt", ".ipynb")
    what = "a Markdown/text file"
    plural = "Markdown/text files"
    hint = "check the path, or use --type repo for a code repository"
    max_file_mb = 4.0
    #: 2: notebooks are read as their cells' text, not their JSON
    revision = "2"

    def accepts(self, rel: str) -> bool:
        return is_document(language_of(rel)) or is_notebook(rel)

    def load_file(self, source: Source, rel: str, path: str) -> Iterable[RawUnit]:
        if is_notebook(rel):
            return notebook_unit(source, rel, path, self.limit_bytes(source.options))
        data = read_bytes(path)
        text, encoding = decode_detect(data, path)
        return [_unit(source, rel, data, text, encoding, language_of(rel) or "text")]
