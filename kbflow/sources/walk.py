"""Deterministic file walks over folders and repositories.

Skips VCS and vendored/virtualenv folders, honours ``.gitignore`` files at
every level, never follows a symlink out of the root, and yields paths in
sorted order so every run sees the same files in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kbflow._lazy import require
from kbflow.errors import SourceError

#: Folders never walked into: VCS metadata, vendored code, virtualenvs, caches, build output.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "CVS",
        "node_modules",
        "bower_components",
        "vendor",
        "third_party",
        ".venv",
        "venv",
        "env",
        ".env",
        ".tox",
        ".nox",
        "site-packages",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        "dist",
        "build",
        "target",
        ".idea",
        ".vscode",
    }
)
MAX_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Skipped:
    """A file the walk left out, and why (reported, never silently dropped)."""

    path: str
    reason: str


def _gitignore(dirpath: str):
    path = os.path.join(dirpath, ".gitignore")
    if not os.path.isfile(path):
        return None
    pathspec = require("pathspec")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return pathspec.GitIgnoreSpec.from_lines(fh.read().splitlines())
    except OSError:
        return None


def walk_files(
    root: str,
    *,
    honour_gitignore: bool = True,
    skip_dirs: frozenset[str] = SKIP_DIRS,
    on_skip: Callable[[Skipped], None] | None = None,
) -> Iterator[str]:
    """Yield repo-relative POSIX paths of regular files under ``root``, sorted.

    Symlinks are followed only while they stay inside ``root``; files over
    :data:`MAX_FILE_BYTES` are reported through ``on_skip``.
    """
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        raise SourceError(f"{root}: not a directory")
    real_root = os.path.realpath(root)
    specs: list[tuple[str, object]] = []  # (relative dir prefix, spec)

    def ignored(rel: str, is_dir: bool) -> bool:
        for prefix, spec in specs:
            if prefix and not rel.startswith(prefix + "/"):
                continue
            sub = rel[len(prefix) + 1 :] if prefix else rel
            if spec.match_file(sub + ("/" if is_dir else "")):
                return True
        return False

    def skip(rel: str, reason: str) -> None:
        if on_skip is not None:
            on_skip(Skipped(rel, reason))

    def visit(abs_dir: str, rel_dir: str) -> Iterator[str]:
        spec = _gitignore(abs_dir) if honour_gitignore else None
        if spec is not None:
            specs.append((rel_dir, spec))
        try:
            entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
        except OSError as exc:
            raise SourceError(f"{abs_dir}: cannot list folder ({exc.strerror or exc})") from None
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                if os.path.commonpath([real_root, target]) != real_root:
                    skip(rel, "symlink leaves the source root")
                    continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if entry.name in skip_dirs or (honour_gitignore and ignored(rel, True)):
                    continue
                if entry.is_symlink():
                    skip(rel, "symlinked folder (not followed, to avoid cycles)")
                    continue
                yield from visit(entry.path, rel)
            elif entry.is_file():
                if honour_gitignore and ignored(rel, False):
                    continue
                try:
                    size = entry.stat().st_size
                except OSError as exc:
                    raise SourceError(f"{entry.path}: cannot be read ({exc.strerror or exc})") from None
                if size > MAX_FILE_BYTES:
                    skip(rel, f"larger than 1 MiB ({size} bytes)")
                    continue
                yield rel
        if spec is not None:
            specs.pop()

    yield from visit(root, "")


def looks_binary(data: bytes) -> bool:
    """True for data with a NUL byte in its first 8 KiB (git's own heuristic)."""
    return b"\0" in data[:8192]


def file_set(uri: str, accepts: Callable[[str], bool], what: str, plural: str, hint: str = "") -> list[tuple[str, str]]:
    """``(relative path, path)`` of ``uri`` itself (a file) or of its files that ``accepts`` (a folder,
    walked as :func:`walk_files` does); a :class:`SourceError` when there are none."""
    if not os.path.exists(uri):
        raise SourceError(f"{uri}: no such file or folder")
    if os.path.isfile(uri):
        if not accepts(os.path.basename(uri)):
            raise SourceError(f"{uri}: not {what}")
        return [(os.path.basename(uri), uri)]
    files = [(rel, os.path.join(uri, rel)) for rel in walk_files(uri) if accepts(rel)]
    if not files:
        raise SourceError(f"{uri}: no {plural} found" + (f"; {hint}" if hint else ""))
    return files
