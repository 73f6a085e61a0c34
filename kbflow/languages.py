"""File extension -> language name; the loaders tag units with it, the chunkers dispatch on it."""

from __future__ import annotations

import os

#: Languages handled as documents (heading-aware chunking) rather than code.
DOCUMENT_LANGUAGES = frozenset({"markdown", "text", "rst"})

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "rst",
}


def language_of(path: str) -> str | None:
    """The language of ``path`` by extension, or ``None`` for files without a structural chunker."""
    name = os.path.basename(path)
    if name.upper() in ("README", "LICENSE", "CHANGELOG", "AUTHORS", "NOTICE", "COPYING"):
        return "text"
    return EXTENSIONS.get(os.path.splitext(name)[1].lower())


def is_document(language: str | None) -> bool:
    return language in DOCUMENT_LANGUAGES
