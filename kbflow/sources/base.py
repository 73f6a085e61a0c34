"""The loader interface and its registry: a source spec in, raw units out.

A loader turns one registered :class:`~kbflow.records.Source` into
:class:`~kbflow.records.RawUnit` objects, and computes the source's
fingerprint: a hash that changes whenever the bytes it would load change, so
an unchanged source is skipped without parsing it.

Nothing is dropped without a word. A loader records every file it does not
read in :attr:`Loader.issues` (:class:`~kbflow.sources.walk.FileIssue`):
files left out by a rule (over the size limit, another file type, ignored)
and files it could not read (corrupt, encrypted, undecodable). One bad file
never sinks its source: the others are loaded, and the source is reported
``partial``. A source with nothing left to load fails, naming why.

Each source type has a size limit for one file (:attr:`Loader.max_file_mb`, a notebook's 16x; ``kbflow
add --max-file-mb N`` overrides it per source, stored in the source's options).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from kbflow.config.registry import Registry
from kbflow.errors import SourceError
from kbflow.records import RawUnit, Source
from kbflow.sources.files import file_hash
from kbflow.sources.notebook import NOTEBOOK_SIZE_FACTOR, is_notebook
from kbflow.sources.walk import FileIssue, format_size, read_by, walk_files

__all__ = [
    "LOADERS",
    "MAX_FILE_MB_OPTION",
    "FileIssue",
    "FileSetLoader",
    "IssueTally",
    "Loader",
    "LoadProgress",
    "SkipFile",
    "get_loader",
    "listed_with_rest",
    "loader_names",
    "register_loader",
]

#: every loader, by the ``--type`` it handles
LOADERS: Registry[Loader] = Registry(
    "source type",
    builtins=[f"kbflow.sources.{m}" for m in ("docs", "jsonl", "pdf", "repo", "tickets", "web")],
    error=SourceError,
)

#: the source option (``kbflow add --max-file-mb``) overriding a type's size limit
MAX_FILE_MB_OPTION = "max_file_mb"
#: issues named in a "nothing left to load" message before "and N more"
_SHOWN = 5
#: per-record problems (bad lines, repeated ids, broken posts) listed one by one; past that, one issue counts them
MAX_LISTED = 100


class IssueTally:
    """Per-record issues of one kind (bad lines, repeated ids), streamed: the first :data:`MAX_LISTED` are
    listed, the rest counted in one issue at ``where`` that says ``N {what} (first 100 listed)``."""

    def __init__(self, where: str, what: str, failed: bool = True) -> None:
        self.where, self.what, self.failed = where, what, failed
        self.listed: list[FileIssue] = []
        self.count = 0

    def add(self, path: str, reason: str) -> None:
        self.count += 1
        if self.count <= MAX_LISTED:
            self.listed.append(FileIssue(path, reason, failed=self.failed))

    def close(self) -> list[FileIssue]:
        """The issues listed, and the one counting the rest where there is a rest."""
        rest = self.count - MAX_LISTED
        if rest <= 0:
            return self.listed
        return [*self.listed, FileIssue(self.where, f"{rest} {self.what} (first {MAX_LISTED} listed)", self.failed)]


def listed_with_rest(reasons: list[tuple[str, str]], where: str, what: str) -> list[FileIssue]:
    """Failed issues for ``(path, reason)`` pairs: the first :data:`MAX_LISTED`, then one counting the rest."""
    tally = IssueTally(where, what)
    for path, reason in reasons:
        tally.add(path, reason)
    return tally.close()


class LoadProgress(Protocol):
    """What a loader reports as it reads (:attr:`Loader.progress`): files read, files in all (0 while unknown),
    PDF pages read, and of those the pages read by OCR."""

    def __call__(self, files: int, total: int, pages: int, ocr_pages: int, /) -> None: ...


class SkipFile(Exception):
    """Raised by :meth:`FileSetLoader.load_file` to leave a file out by a rule (not a failure)."""


class Loader(ABC):
    """Loads one source type. Subclasses set ``name`` and register themselves."""

    #: the ``--type`` this loader handles
    name: str = ""
    #: one line for ``kbflow add --help``
    description: str = ""
    #: the default size limit of one file of this type in MiB (``None``: no limit)
    max_file_mb: float | None = 1.0
    #: the URI schemes this loader fetches (``("http", "https")`` for web pages); others take local paths only
    schemes: tuple[str, ...] = ()

    def __init__(self) -> None:
        #: what the last :meth:`fingerprint` or :meth:`load` left out, and why
        self.issues: list[FileIssue] = []
        #: set by the caller to follow a long load (:class:`LoadProgress`)
        self.progress: LoadProgress | None = None
        self._done = [0, 0, 0, 0]
        #: the lake the source belongs to (set by the pipeline): where fetched copies are kept
        self.lake_uri: str | None = None
        #: whether :meth:`fingerprint` may keep what it fetched (``False`` for a read-only staleness check)
        self.keep_fetched = True
        #: while :meth:`load` reads a file, the path of the one it reads next (``None`` at the last): a loader
        #: may start on it early (the PDF loader's workers parse its first pages)
        self.upcoming: str | None = None

    def report_progress(self, *, files: int = 0, pages: int = 0, total: int | None = None, ocr_pages: int = 0) -> None:
        """Count ``files`` and ``pages`` done (and the files in all, and the pages read by OCR), and tell
        :attr:`progress` (``progress(files, files in all, pages, OCR pages)``)."""
        self._done[0] += files
        self._done[2] += pages
        self._done[3] += ocr_pages
        if total is not None:
            self._done[1] = total
        if self.progress is not None:
            self.progress(*self._done)

    def limit_bytes(self, options: Mapping[str, Any] | None = None) -> int | None:
        """The size limit of one file in bytes: the source's ``max_file_mb`` option, else the type's."""
        mb = (options or {}).get(MAX_FILE_MB_OPTION, self.max_file_mb)
        return None if mb is None else int(float(mb) * 1024 * 1024)

    def over_limit(self, size: int, options: Mapping[str, Any] | None = None, rel: str = "") -> str | None:
        """Why a file of ``size`` bytes is left out (``None``: it is within the limit; a notebook's is larger)."""
        limit = self.limit_bytes(options)
        limit = limit * NOTEBOOK_SIZE_FACTOR if limit is not None and is_notebook(rel) else limit
        if limit is None or size <= limit:
            return None
        return (
            f"{format_size(size)} is over the {format_size(limit)} limit of {self.name} sources; "
            f"raise it with `kbflow add ... --max-file-mb N`"
        )

    @abstractmethod
    def check(self, uri: str, options: Mapping[str, Any] | None = None) -> None:
        """Raise :class:`SourceError` if ``uri`` cannot be this type of source (at ``kbflow add``)."""

    @abstractmethod
    def fingerprint(self, source: Source) -> str:
        """A hash of everything :meth:`load` would read; equal hashes mean nothing to do."""

    @abstractmethod
    def load(self, source: Source) -> Iterator[RawUnit]:
        """Yield the source's raw units in a deterministic order, each with a ``unit_key`` unique in the source.

        Files it does not read are recorded in :attr:`issues`; a source with
        nothing left to load raises :class:`SourceError`.
        """

    def estimate_bytes(self, source: Source) -> int:
        """Roughly how many bytes :meth:`load` reads (for scheduling: big sources go last)."""
        try:
            return os.path.getsize(source.uri) if os.path.isfile(source.uri) else 0
        except OSError:
            return 0

    def duplicate_issues(self, source: Source, keys: list[str]) -> list[FileIssue]:
        """Issues for the units left out because an earlier unit of ``source`` had the same key.

        ``keys`` holds one entry per unit left out, in load order; the first
        unit of each key is kept. Keys are checked after loading
        (:func:`kbflow.pipeline.load_source`, in Arrow), so a loader need not
        remember every key it yielded; this is called only then, and may
        re-read the source to say where the repeats are. At most
        :data:`MAX_LISTED` are listed, then one issue counts the rest.
        """
        reasons = [(key, "a second unit with this key; the first is kept") for key in keys]
        return listed_with_rest(reasons, source.uri, "more repeated keys")

    def nothing_loaded(self, source: Source) -> SourceError:
        """The error for a source none of whose files could be loaded, naming why each was left out."""
        shown = "; ".join(str(issue) for issue in self.issues[:_SHOWN])
        more = f"; and {len(self.issues) - _SHOWN} more" if len(self.issues) > _SHOWN else ""
        if not self.issues:
            return SourceError(f"{source.uri}: nothing to index (the files hold no text)")
        n = len(self.issues)
        return SourceError(
            f"{source.uri}: nothing to index; {'the file was' if n == 1 else f'all {n} files were'} "
            f"left out: {shown}{more}"
        )


def _reason(exc: Exception, path: str) -> str:
    """An error message without the leading ``path: `` (the issue names the file already)."""
    message = str(exc)
    return message[len(path) + 2 :] if message.startswith(path + ": ") else message


class FileSetLoader(Loader):
    """A loader over one file or a folder of files with given suffixes; fingerprinted by their bytes.

    Subclasses implement :meth:`load_file`. Each file is loaded on its own: a
    :class:`SourceError` from one file records it as failed and the others go
    on; :class:`SkipFile` records it as left out by a rule.
    """

    #: file name endings this loader reads, lower case
    suffixes: tuple[str, ...] = ()
    #: what one such file is, and what several are, for error messages ("a PDF", "PDFs")
    what: str = ""
    plural: str = ""
    #: said after "no such files found", e.g. another ``--type`` to try
    hint: str = ""
    #: :meth:`load_file` streams its units and raises only before the first one (PDFs: page by page)
    streams: bool = False
    #: bumped when the loader reads the same files into other units (part of the fingerprint when set)
    revision: str = ""

    def accepts(self, rel: str) -> bool:
        """Whether the file at relative path ``rel`` is one this loader reads (by default: by suffix)."""
        return rel.lower().endswith(self.suffixes)

    def _kinds(self) -> str:
        return f" ({', '.join(self.suffixes)})" if self.suffixes else ""

    def files(self, uri: str, options: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
        """``(relative path, path)`` of every file to read, in order; the others go to :attr:`issues`.

        ``uri`` is one file or a folder (walked as
        :func:`~kbflow.sources.walk.walk_files` does). A :class:`SourceError`
        when ``uri`` is missing, or holds no file of this type at all.
        """
        self.issues = []
        if not os.path.exists(uri):
            raise SourceError(f"{uri}: no such file or folder (was it moved? re-add the source)")
        if os.path.isfile(uri):
            name = os.path.basename(uri)
            if not self.accepts(name):
                raise SourceError(f"{uri}: not {self.what}{self._kinds()}{read_by(name, self.name)}")
            reason = self.over_limit(os.path.getsize(uri), options, name)
            if reason:
                self.issues.append(FileIssue(name, reason))
                return []
            return [(name, uri)]
        files = []
        for rel, size in walk_files(uri, on_skip=self.issues.append):
            if not self.accepts(rel):
                self.issues.append(FileIssue(rel, f"not {self.what}{self._kinds()}{read_by(rel, self.name)}"))
                continue
            reason = self.over_limit(size, options, rel)
            if reason:
                self.issues.append(FileIssue(rel, reason))
                continue
            files.append((rel, os.path.join(uri, rel)))
        if not files and not any(self.accepts(i.path) for i in self.issues):
            plural = (self.plural or self.what) + self._kinds()
            raise SourceError(f"{uri}: no {plural} found" + (f"; {self.hint}" if self.hint else ""))
        return files

    def check(self, uri: str, options: Mapping[str, Any] | None = None) -> None:
        if not self.files(uri, options):
            raise self.nothing_loaded(Source("check", self.name, uri))

    def fingerprint(self, source: Source) -> str:
        from kbflow.records import ids

        files = self.files(source.uri, source.options)
        parts = [(rel, file_hash(path)) for rel, path in files]
        # a file left out by a rule is part of what was decided: raising a limit must reload the source
        parts += [(f"left out: {issue.path}", "") for issue in self.issues]
        if self.revision:  # the loader reads the same bytes otherwise now: every source of its type reloads
            parts.append(("loader revision", self.revision))
        return ids.combine(parts)

    def estimate_bytes(self, source: Source) -> int:
        try:
            return sum(os.path.getsize(path) for _, path in self.files(source.uri, source.options))
        except (OSError, SourceError):
            return 0

    @abstractmethod
    def load_file(self, source: Source, rel: str, path: str) -> Iterable[RawUnit]:
        """The units of one file (``rel`` relative to the source root, ``path`` on disk).

        Raise :class:`SourceError` for a file that cannot be read (it is
        recorded as failed) or :class:`SkipFile` to leave it out by a rule.
        """

    def load(self, source: Source) -> Iterator[RawUnit]:
        files = self.files(source.uri, source.options)
        loaded = 0
        self.report_progress(total=len(files))
        for i, (rel, path) in enumerate(files):
            self.upcoming = files[i + 1][1] if i + 1 < len(files) else None
            yield from self.load_one(source, rel, path)
            self.report_progress(files=1)
            loaded += self._loaded
        if not loaded:
            raise self.nothing_loaded(source)

    def load_one(self, source: Source, rel: str, path: str) -> Iterator[RawUnit]:
        """One file's units; its failure, whatever the error, recorded as an issue (``self._loaded``: units given).

        A streaming loader (:attr:`streams`) raises only before its first unit,
        so a failed file never leaves part of its units behind.
        """
        self._loaded = 0
        try:
            units = self.load_file(source, rel, path)
            if self.streams:
                for unit in units:
                    self._loaded += 1
                    yield unit
                return
            units = list(units)
        except SkipFile as skip:
            self.issues.append(FileIssue(rel, str(skip)))
            return
        except SourceError as exc:
            self.issues.append(FileIssue(rel, _reason(exc, path), failed=True))
            return
        except Exception as exc:  # an input no rule foresaw fails its file alone, unless part of it was given
            if self._loaded:
                raise
            why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            self.issues.append(FileIssue(rel, f"could not be read ({why})", failed=True))
            return
        self._loaded = len(units)
        yield from units


def register_loader(cls: type[Loader]) -> type[Loader]:
    """Class decorator: make ``cls`` the loader for ``cls.name`` (duplicates are rejected)."""
    return LOADERS.register()(cls)


def get_loader(source_type: str) -> Loader:
    """A new loader for ``source_type`` (``docs``, ``repo``, ``jsonl``, ...)."""
    return LOADERS.get(source_type)()


def loader_names() -> list[str]:
    """Every source type, the built-in ones and those a plugin registered (what ``--type`` and filters take)."""
    return LOADERS.names()
