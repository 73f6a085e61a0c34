"""Code repositories: one raw unit per text file, in a deterministic walk.

Skips VCS, vendored and virtualenv folders, files over 1 MiB, binary files and
symlinks that leave the root, and honours ``.gitignore``. What is skipped is
reported (``skipped``) and logged, never silently dropped.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

from kbflow import ids
from kbflow.errors import SourceError
from kbflow.languages import is_document, language_of, language_of_script
from kbflow.records import Locator, RawUnit, Source
from kbflow.sources.base import Loader, read_bytes, register_loader
from kbflow.sources.walk import Skipped, looks_binary, walk_files

log = logging.getLogger(__name__)


@register_loader
class RepoLoader(Loader):
    name = "repo"
    description = "a code repository (tree-sitter chunks for code, documents for Markdown)"

    def __init__(self) -> None:
        self.skipped: list[Skipped] = []

    def check(self, uri: str) -> None:
        if not os.path.isdir(uri):
            raise SourceError(f"{uri}: a repo source must be a folder")

    def _walk(self, uri: str) -> list[str]:
        self.check(uri)
        self.skipped = []
        return list(walk_files(uri, on_skip=self.skipped.append))

    def fingerprint(self, source: Source) -> str:
        return ids.combine(
            (rel, ids.bytes_hash(read_bytes(os.path.join(source.uri, rel)))) for rel in self._walk(source.uri)
        )

    def load(self, source: Source) -> Iterator[RawUnit]:
        count = 0
        for rel in self._walk(source.uri):
            path = os.path.join(source.uri, rel)
            data = read_bytes(path)
            if looks_binary(data):
                self._skip(source, rel, "binary file")
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                self._skip(source, rel, "not valid UTF-8 text")
                continue
            text = text[1:] if text.startswith("\ufeff") else text
            if not text.strip():
                continue
            language = language_of(rel)
            if language is None and not os.path.splitext(rel)[1]:
                language = language_of_script(text[: text.find("\n")] if "\n" in text else text)
            if is_document(language):
                kind, locator = "doc", Locator(kind="doc", path=rel, char_start=0, char_end=len(text))
            else:
                n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
                kind, locator = "code", Locator(kind="code", path=rel, line_start=1, line_end=max(1, n_lines))
            count += 1
            yield RawUnit(
                source_id=source.source_id,
                unit_key=rel,
                text=text,
                content_kind=kind,
                locator=locator,
                title=rel,
                file_hash=ids.bytes_hash(data),
                language=language,
            )
        for item in self.skipped:
            log.info("source %s: skipped %s (%s)", source.source_id, item.path, item.reason)
        if count == 0:
            raise SourceError(f"{source.uri}: no text files found in the repository (all empty, binary or ignored)")

    def _skip(self, source: Source, rel: str, reason: str) -> None:
        self.skipped.append(Skipped(rel, reason))
        log.warning("source %s: skipping %s: %s", source.source_id, os.path.join(source.uri, rel), reason)
