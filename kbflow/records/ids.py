"""Stable ids and content hashes: derived from content and position, never from run order or time."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def digest(*parts: str | bytes, size: int = 16) -> str:
    """Hex BLAKE2b digest of ``parts`` (each length-prefixed, so ``("ab", "c") != ("a", "bc")``)."""
    h = hashlib.blake2b(digest_size=size)
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def bytes_hash(data: bytes) -> str:
    """Content hash of raw bytes (a file's bytes)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def text_hash(text: str) -> str:
    """Content hash of a text (a chunk's text: the key of its embedding)."""
    return digest(text)


def combine(hashes: Iterable[tuple[str, str]]) -> str:
    """One hash over ``(name, hash)`` pairs, order-independent (sorted by name)."""
    h = hashlib.blake2b(digest_size=16)
    for name, value in sorted(hashes):
        h.update(digest(name, value).encode("ascii"))
    return h.hexdigest()
