"""The loader interface and its registry: a source spec in, raw units out.

A loader turns one registered :class:`~kbflow.records.Source` into
:class:`~kbflow.records.RawUnit` objects, and computes the source's
fingerprint: a hash that changes whenever the bytes it would load change, so
an unchanged source is skipped without parsing it.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator

from kbflow.errors import SourceError
from kbflow.records import RawUnit, Source
from kbflow.registry import Registry

__all__ = [
    "LOADERS",
    "FileSetLoader",
    "Loader",
    "file_hash",
    "get_loader",
    "loader_names",
    "read_text",
    "register_loader",
    "slugify",
]

#: every loader, by the ``--type`` it handles
LOADERS: Registry[Loader] = Registry(
    "source type",
    builtins=[f"kbflow.sources.{m}" for m in ("docs", "jsonl", "pdf", "repo", "tickets", "web")],
    error=SourceError,
)


class Loader(ABC):
    """Loads one source type. Subclasses set ``name`` and register themselves."""

    #: the ``--type`` this loader handles
    name: str = ""
    #: one line for ``kbflow add --help``
    description: str = ""

    @abstractmethod
    def check(self, uri: str) -> None:
        """Raise :class:`SourceError` if ``uri`` cannot be this type of source (at ``kbflow add``)."""

    @abstractmethod
    def fingerprint(self, source: Source) -> str:
        """A hash of everything :meth:`load` would read; equal hashes mean nothing to do."""

    @abstractmethod
    def load(self, source: Source) -> Iterator[RawUnit]:
        """Yield the source's raw units in a deterministic order, each with a ``unit_key`` unique in the source."""

    def duplicate_key_error(self, source: Source, unit_key: str) -> str:
        """The message for two units of ``source`` that share ``unit_key``.

        Keys are checked after loading (:func:`kbflow.pipeline.load_source`, in
        Arrow), so a loader need not remember every key it yielded; this is
        called only then, and may re-read the source to say where the two are.
        """
        return f"{source.uri}: two units share the key {unit_key!r}"


class FileSetLoader(Loader):
    """A loader over one file or a folder of files with given suffixes; fingerprinted by their bytes."""

    #: file name endings this loader reads, lower case
    suffixes: tuple[str, ...] = ()
    #: what one such file is, and what several are, for error messages ("a PDF", "PDFs")
    what: str = ""
    plural: str = ""
    #: said after "no such files found", e.g. another ``--type`` to try
    hint: str = ""

    def accepts(self, rel: str) -> bool:
        """Whether the file at relative path ``rel`` is one this loader reads (by default: by suffix)."""
        return rel.lower().endswith(self.suffixes)

    def files(self, uri: str) -> list[tuple[str, str]]:
        from kbflow.sources.walk import file_set

        kinds = f" ({', '.join(self.suffixes)})"
        return file_set(uri, self.accepts, self.what + kinds, (self.plural or self.what) + kinds, self.hint)

    def check(self, uri: str) -> None:
        self.files(uri)

    def fingerprint(self, source: Source) -> str:
        from kbflow import ids

        return ids.combine((rel, ids.bytes_hash(read_bytes(path))) for rel, path in self.files(source.uri))


def register_loader(cls: type[Loader]) -> type[Loader]:
    """Class decorator: make ``cls`` the loader for ``cls.name`` (duplicates are rejected)."""
    return LOADERS.register()(cls)


def get_loader(source_type: str) -> Loader:
    """A new loader for ``source_type`` (``docs``, ``repo``, ``jsonl``, ...)."""
    return LOADERS.get(source_type)()


def loader_names() -> list[str]:
    return LOADERS.names()


def read_bytes(path: str) -> bytes:
    """Read a file's bytes, turning OS errors into a :class:`SourceError` naming the file."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except PermissionError:
        raise SourceError(f"{path}: permission denied; make the file readable or remove it from the source") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory, expected a file") from None
    except FileNotFoundError:
        raise SourceError(f"{path}: file not found") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def file_hash(path: str, block: int = 1 << 20) -> str:
    """:func:`kbflow.ids.bytes_hash` of a file's bytes, read a block at a time."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb") as fh:
            while data := fh.read(block):
                h.update(data)
    except OSError:
        read_bytes(path)  # raises the SourceError naming the reason
        raise
    return h.hexdigest()


def decode_text(data: bytes, path: str) -> str:
    """Decode UTF-8 (a leading BOM dropped); the loaders and the resolver decode alike."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{path}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert the file to UTF-8 or remove it from the source"
        ) from None
    return text.removeprefix("\ufeff")


def read_text(path: str) -> str:
    """Read a UTF-8 text file exactly as the loaders do (no newline translation)."""
    return decode_text(read_bytes(path), path)


_SLUG = re.compile(r"[^a-z0-9._-]+")


def slugify(uri: str) -> str:
    """A readable default source id from a path: ``/x/My Docs/`` -> ``my-docs``."""
    base = os.path.basename(os.path.normpath(uri)) or "source"
    base = os.path.splitext(base)[0] if os.path.isfile(uri) else base
    slug = _SLUG.sub("-", base.lower()).strip("-.")
    return slug or "source"
