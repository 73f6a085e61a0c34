"""Set operations on Arrow arrays: ids, hashes and keys are compared here, never as Python sets.

A corpus of a million chunks has a million 32-character ids; as Arrow arrays
they take tens of bytes each, as Python strings in a set several times that.
The ingest steps diff what a source holds against what it held with these.
"""

from __future__ import annotations

from typing import Any

from kbflow._lazy import require

__all__ = ["array", "count_missing", "differs", "distinct", "without"]


def array(values: Any) -> Any:
    """An Arrow array from an array or chunked array."""
    return values.combine_chunks() if hasattr(values, "combine_chunks") else values


def distinct(values: Any) -> Any:
    """The distinct non-null values of an Arrow (chunked) array, as one array."""
    return require("pyarrow.compute").unique(array(values).drop_null())


def without(values: Any, exclude: Any) -> Any:
    """The values of Arrow array ``values`` that are not in ``exclude``."""
    values = array(values)
    if not len(exclude) or not len(values):
        return values
    pc = require("pyarrow.compute")
    return values.filter(pc.invert(pc.is_in(values, value_set=array(exclude))))


def count_missing(values: Any, exclude: Any) -> int:
    """How many of ``values`` are not in ``exclude``."""
    return len(without(values, exclude))


def differs(values: Any, value: Any) -> bool:
    """Whether any of Arrow array ``values`` is not ``value`` (nulls compared as Python compares None)."""
    pc = require("pyarrow.compute")
    if value is None:
        return bool(pc.any(pc.is_valid(values)).as_py())
    same = pc.fill_null(pc.equal(values, value), False)
    return bool(len(values)) and not pc.all(same).as_py()
