"""Values written into a Lance filter: a string quoted as a SQL literal, a column tested against a set of them.

Every filter kbflow builds from a value it did not write itself (a source id, a chunk id, a key id) goes
through these, so no value can end its literal early.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["sql_in", "sql_str"]


def sql_str(value: str) -> str:
    """Quote ``value`` as a SQL string literal for a Lance filter."""
    return "'" + str(value).replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str] | None) -> str:
    """``column IN ('a', 'b')``; ``FALSE`` for an empty collection (or none)."""
    values = list(values or ())
    if not values:
        return "FALSE"
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"
