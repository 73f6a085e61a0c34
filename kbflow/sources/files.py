"""Reading a source's files: their bytes, their hash, and their text in whatever encoding they were written in.

The loaders and the resolver read through these functions, so a citation is
re-read exactly as its file was loaded: the same bytes, the same decoding (a
legacy encoding recorded in the locator), the same errors naming the file.
"""

from __future__ import annotations

import codecs

from kbflow.errors import SourceError

__all__ = ["MAX_NUL_SHARE", "decode_detect", "decode_text", "file_hash", "read_bytes", "read_text"]


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
    """:func:`kbflow.records.ids.bytes_hash` of a file's bytes, read a block at a time."""
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


#: a text may hold NUL bytes up to this share of its bytes; more make it a binary file
MAX_NUL_SHARE = 0.01


def decode_text(data: bytes, path: str, encoding: str | None = None) -> str:
    """Decode a text file; the loaders and the resolver decode alike (see :func:`decode_detect`).

    ``encoding``: the one recorded when the file was loaded (a citation's
    ``locator.encoding``); ``None`` decodes as at load.
    """
    if encoding is not None:
        try:
            return data.decode(encoding).removeprefix("\ufeff")
        except (UnicodeDecodeError, LookupError):
            raise SourceError(f"{path}: no longer decodes as {encoding}, the encoding it was indexed with") from None
    return decode_detect(data, path)[0]


def decode_detect(data: bytes, path: str) -> tuple[str, str | None]:
    """A text file's text and its encoding where that is not UTF-8 (``None`` for UTF-8).

    UTF-8 (a leading BOM dropped), or UTF-16 where the file starts with its
    BOM. A file that is not UTF-8 is decoded in the legacy encoding
    ``charset-normalizer`` finds for it (cp1252, latin-1, Shift JIS, ...),
    which the loaders record in the locator so a citation is re-read the same
    way. A few stray NUL bytes (at most 4, or 1% of the bytes) are kept as
    U+FFFD, one character for one, so offsets still match; more make it a
    binary file, which is an error naming the file, as is a file with NUL
    bytes that is not UTF-8, or one no encoding fits.
    """
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        try:
            return data.decode("utf-16"), None  # the BOM says it: nothing to record
        except UnicodeDecodeError:
            raise SourceError(f"{path}: starts with a UTF-16 byte-order mark but is not valid UTF-16") from None
    nul = data.count(b"\0")
    if nul > max(4, MAX_NUL_SHARE * len(data)):
        raise SourceError(f"{path}: a binary file ({nul} NUL bytes), not text")
    try:
        text, encoding = data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        if nul:
            raise SourceError(f"{path}: a binary file (NUL bytes, and not UTF-8), not text") from None
        encoding = _legacy_encoding(data)
        if encoding is None:
            raise SourceError(
                f"{path}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}) and no legacy "
                "encoding fits; convert the file to UTF-8 or remove it from the source"
            ) from None
        text = data.decode(encoding)
    text = text.removeprefix("\ufeff")
    return (text.replace("\0", "\ufffd") if nul else text), encoding


def _legacy_encoding(data: bytes) -> str | None:
    """The encoding ``charset-normalizer`` finds for bytes that are not UTF-8 (``None``: none fits)."""
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        return None
    best = min(m.chaos for m in matches)
    tied = [m for m in matches if m.chaos == best]
    # short Western texts fit many code pages equally well; like browsers (WHATWG), prefer windows-1252 then
    names = [name for m in tied for name in (m.encoding, *m.could_be_from_charset)]
    encoding = "cp1252" if "cp1252" in names else tied[0].encoding
    if encoding in ("utf_8", "ascii"):
        return None
    try:
        data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None
    return encoding


def read_text(path: str, encoding: str | None = None) -> str:
    """Read a text file exactly as the loaders do (no newline translation), in its recorded ``encoding``."""
    return decode_text(read_bytes(path), path, encoding)
