"""Deterministic file walks over folders and repositories, and the record of what a walk leaves out.

Skips version-control metadata and caches silently (they are never content),
skips vendored, virtualenv and build folders (but a build that a
``package.json`` publishes as the package's code, read once:
:mod:`kbflow.sources.packages`) and what ``.gitignore`` files
ignore (each reported once, as a :class:`FileIssue`), never follows a symlink
out of the root, and yields paths in sorted order so every run sees the same
files in the same order. Nothing a walk leaves out goes unreported: every
other file not read is a :class:`FileIssue` with its reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kbflow._lazy import require
from kbflow.errors import SourceError
from kbflow.sources.packages import other_target, published_build
from kbflow.text.terms import LONE_HALF, escaped_halves

__all__ = [
    "QUIET_DIRS",
    "SKIP_DIRS",
    "FileIssue",
    "format_size",
    "looks_binary",
    "walk_files",
]

#: Folders never walked into and never reported: version-control metadata and tool caches.
QUIET_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "CVS",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        ".idea",
        ".vscode",
    }
)
#: Folders never walked into, each reported once: vendored code, virtualenvs, build output.
SKIP_DIRS = frozenset(
    {
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
        "dist",
        "build",
        "target",
    }
)


#: what marks a folder as a kbflow lake (its write lease, its registry), which no walk reads
LAKE_MARKS = ("_kbflow.lock", "sources.lance")
#: package managers' lock files: generated lists of versions and hashes, which match any query naming a package
#: (GitHub's linguist counts them as generated too)
LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lock",
        "Cargo.lock",
        "poetry.lock",
        "Pipfile.lock",
        "uv.lock",
        "pdm.lock",
        "pixi.lock",
        "conda-lock.yml",
        "composer.lock",
        "Gemfile.lock",
        "go.sum",
        "Package.resolved",
        "Podfile.lock",
        "pubspec.lock",
        "mix.lock",
        "flake.lock",
        "gradle.lockfile",
        "packages.lock.json",
        "paket.lock",
    }
)


#: the source type that reads a file another type leaves out, by suffix
_READ_BY = {".pdf": "pdf", ".html": "web", ".htm": "web", ".md": "docs", ".rst": "docs", ".ipynb": "docs"}


def read_by(rel: str, source_type: str) -> str:
    """``"; a pdf source reads it (kbflow add PATH --type pdf)"`` where a source of another type than
    ``source_type`` reads ``rel`` ("" where none does)."""
    other = _READ_BY.get(os.path.splitext(rel)[1].lower())
    if other is None or other == source_type or (source_type == "repo" and other == "docs"):
        return ""
    return f"; a {other} source reads it (kbflow add PATH --type {other})"


@dataclass(frozen=True)
class FileIssue:
    """A file (or folder, ending in ``/``) of a source that was not read, and why.

    ``failed`` is false for files left out by a rule (a size limit, an ignore
    rule, another file type) and true for files kbflow meant to read but could
    not (corrupt, encrypted, undecodable). Either way it is reported: in the
    ingest summary, in ``kbflow status`` and in the ``documents`` metadata.
    """

    path: str
    reason: str
    failed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "failed": self.failed}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileIssue:
        return cls(str(data["path"]), str(data["reason"]), bool(data.get("failed", False)))

    def __str__(self) -> str:
        return f"{self.path} ({self.reason})"


def format_size(size: float) -> str:
    """``1536`` -> ``1.5 KiB``; the units of the size limits."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover


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


def _ignored(specs: list[tuple[str, Any]], rel: str, is_dir: bool) -> bool:
    """Whether a .gitignore of ``rel``'s folder or one above it matches ``rel``."""
    for prefix, spec in specs:
        if prefix and not rel.startswith(prefix + "/"):
            continue
        sub = rel[len(prefix) + 1 :] if prefix else rel
        if spec.match_file(sub + ("/" if is_dir else "")):
            return True
    return False


def walk_files(
    root: str,
    *,
    honour_gitignore: bool = True,
    on_skip: Callable[[FileIssue], None] | None = None,
) -> Iterator[tuple[str, int]]:
    """Yield ``(relative POSIX path, size in bytes)`` of the regular files under ``root``, sorted.

    Symlinks are followed only while they stay inside ``root``. Folders and
    files left out (vendored and build folders, ``.gitignore`` matches,
    escaping symlinks) are reported through ``on_skip``; version-control and
    cache folders are left out silently. Size limits are the caller's.
    """
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        raise SourceError(f"{root}: not a directory")
    yield from _Walk(os.path.realpath(root), honour_gitignore, on_skip).visit(root, "")


@dataclass
class _Walk:
    """One walk of a folder tree: what it follows, what it reports, and the ``.gitignore`` specs in force."""

    real_root: str
    honour_gitignore: bool
    on_skip: Callable[[FileIssue], None] | None
    #: (relative dir prefix, the folder's .gitignore spec), innermost last
    specs: list[tuple[str, Any]] = field(default_factory=list)
    #: build folders walked as a package's published code (relative path -> the package's folder)
    builds: dict[str, str] = field(default_factory=dict)

    def skip(self, rel: str, reason: str) -> None:
        if self.on_skip is not None:
            self.on_skip(FileIssue(rel, reason))

    def visit(self, abs_dir: str, rel_dir: str) -> Iterator[tuple[str, int]]:
        spec = _gitignore(abs_dir) if self.honour_gitignore else None
        if spec is not None:
            self.specs.append((rel_dir, spec))
        try:
            entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
        except OSError as exc:
            raise SourceError(f"{abs_dir}: cannot list folder ({exc.strerror or exc})") from None
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if LONE_HALF.search(entry.name):  # bytes that are not UTF-8, which Python keeps as lone halves
                shown = escaped_halves(rel)
                self.skip(
                    shown + ("/" if entry.is_dir(follow_symlinks=False) else ""),
                    "its name is not valid UTF-8 (a legacy encoding?); rename it to UTF-8 to load it",
                )
                continue
            kind = self._kind(entry, rel)
            if kind == "dir":
                yield from self.visit(entry.path, rel)
            elif kind == "file" and (found := self._file(entry, rel)) is not None:
                yield found
        if spec is not None:
            self.specs.pop()

    def _kind(self, entry: os.DirEntry, rel: str) -> str | None:
        """``"dir"`` to walk, ``"file"`` to list, None for an entry left out (reported unless it is quiet)."""
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if os.path.commonpath([self.real_root, target]) != self.real_root:
                self.skip(rel, "symlink leaves the source root (not followed)")
                return None
        try:
            is_dir = entry.is_dir()
        except OSError as exc:
            self.skip(rel, f"cannot be read ({exc.strerror or exc})")
            return None
        if is_dir:
            reason = self._folder_left_out(entry, rel)
            if reason:
                self.skip(rel + "/", reason)
            return "dir" if reason is None else None
        if entry.is_file():
            return "file"
        self.skip(rel, "not a regular file")
        return None

    def _folder_left_out(self, entry: os.DirEntry, rel: str) -> str | None:
        """Why a folder is not walked ("" for version-control and cache folders, left out silently), or None."""
        if entry.name in QUIET_DIRS:
            return ""
        if entry.name in SKIP_DIRS:
            parent = os.path.dirname(entry.path)
            if not published_build(parent, entry.name):
                return "vendored, virtualenv or build folder (not walked)"
            self.builds[rel] = parent  # an npm package published as its build: its code
        for build, package in self.builds.items():
            if rel.startswith(build + "/"):
                entry_point = other_target(package, os.path.relpath(entry.path, package).replace(os.sep, "/"))
                if entry_point is not None:
                    return f"the same code built for another target (the package's entry point is {entry_point})"
        if any(os.path.exists(os.path.join(entry.path, mark)) for mark in LAKE_MARKS):
            return "a kbflow lake (not walked: its own files are no content, and each ingest changes them)"
        if self.honour_gitignore and _ignored(self.specs, rel, True):
            return "ignored by .gitignore"
        if entry.is_symlink():
            return "symlinked folder (not followed, to avoid cycles)"
        return None

    def _file(self, entry: os.DirEntry, rel: str) -> tuple[str, int] | None:
        if self.honour_gitignore and _ignored(self.specs, rel, False):
            self.skip(rel, "ignored by .gitignore")
            return None
        if entry.name in LOCK_FILES:
            self.skip(rel, "a package manager's lock file (generated)")
            return None
        try:
            return rel, entry.stat().st_size
        except OSError as exc:
            self.skip(rel, f"cannot be read ({exc.strerror or exc})")
            return None


def looks_binary(data: bytes) -> bool:
    """True for data with a NUL byte in its first 8 KiB (git's own heuristic)."""
    return b"\0" in data[:8192]
