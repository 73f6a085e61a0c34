"""File extension -> language name; the loaders tag units with it, the chunkers dispatch on it."""

from __future__ import annotations

import os

#: Structured data files: documents whose sections are their keys (see kbflow.chunk.structured).
DATA_LANGUAGES = frozenset({"json", "yaml", "toml"})
#: Languages handled as documents (heading- or key-aware chunking) rather than code.
DOCUMENT_LANGUAGES = frozenset({"markdown", "text", "rst", "asciidoc"}) | DATA_LANGUAGES

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".php": "php",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".sc": "scala",
    ".swift": "swift",
    ".lua": "lua",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".sh": "bash",
    ".bash": "bash",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rmd": "markdown",  # R Markdown and Quarto: Markdown with fenced code
    ".qmd": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "rst",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
}


def language_of(path: str) -> str | None:
    """The language of ``path`` by extension, or ``None`` for files without a structural chunker."""
    name = os.path.basename(path)
    if name.upper() in ("README", "LICENSE", "CHANGELOG", "AUTHORS", "NOTICE", "COPYING"):
        return "text"
    return EXTENSIONS.get(os.path.splitext(name)[1].lower())


_SHEBANGS = {
    "python": "python",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "node": "javascript",
    "ruby": "ruby",
    "lua": "lua",
}


def language_of_script(first_line: str) -> str | None:
    """The language a ``#!`` line names (``#!/usr/bin/env python3`` -> python), for files without an extension."""
    if not first_line.startswith("#!"):
        return None
    words = first_line[2:].strip().split()
    if not words:
        return None
    prog = words[1] if words[0].endswith("/env") and len(words) > 1 else words[0]
    prog = os.path.basename(prog).rstrip("0123456789.")
    return _SHEBANGS.get(prog)


def is_document(language: str | None) -> bool:
    return language in DOCUMENT_LANGUAGES
