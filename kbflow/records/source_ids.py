"""Source ids: one pattern, checked wherever a source is named for the first time.

A source id is a name, not a path: it appears in URLs (``/v1/sources/ID``,
``/sources/ID/remove``), in file names and in filters. It is 1 to 64
characters: letters, digits, ``.``, ``_`` and ``-``, starting with a letter or
a digit (:data:`SOURCE_ID_PATTERN`). A lake whose sources were registered with
ids of an older, looser rule still opens and answers under them;
``kbflow rename OLD NEW`` gives such a source a valid id.
"""

from __future__ import annotations

import re

from kbflow.errors import SourceError

__all__ = ["MAX_SOURCE_ID", "SOURCE_ID_PATTERN", "check_source_id", "is_source_id"]

#: the most characters a source id may have
MAX_SOURCE_ID = 64
#: what a source id is: letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit
SOURCE_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def is_source_id(value: object) -> bool:
    """Whether ``value`` is a valid source id."""
    return isinstance(value, str) and SOURCE_ID_PATTERN.fullmatch(value) is not None


def check_source_id(value: object) -> str:
    """``value`` when it is a valid source id, else a :class:`~kbflow.errors.SourceError` saying why."""
    if is_source_id(value):
        return str(value)
    if not isinstance(value, str) or not value:
        raise SourceError(f"a source id must be a non-empty string, got {value!r}")
    if len(value) > MAX_SOURCE_ID:
        raise SourceError(f"source id {value[:40]!r}...: {len(value)} characters; the most is {MAX_SOURCE_ID}")
    raise SourceError(
        f"source id {value!r}: use letters, digits, '.', '_' and '-', starting with a letter or digit "
        f"(at most {MAX_SOURCE_ID} characters)"
    )
