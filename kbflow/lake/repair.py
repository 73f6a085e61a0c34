"""Duplicate keys: found in Arrow, removed in one commit per table.

Every table has a key (:data:`kbflow.schema.KEYS`). Writers hold the lake's
lease, so duplicates should never appear; but a lake written by an older
kbflow, by two writers on object storage (no lease there yet), or by hand can
hold them, and nothing downstream should have to cope. :func:`find_duplicates`
counts them (the ``keys_unique`` check); :func:`repair_duplicates` keeps the
first row of each key (the lowest row id: the first one committed) and deletes
the others by row id, one commit per table. Every ingest runs it first.
"""

from __future__ import annotations

from typing import Any

from kbflow import schema as S
from kbflow._lazy import require

__all__ = ["find_duplicates", "repair_duplicates"]


def _extra_row_ids(dataset: Any, keys: tuple[str, ...]) -> Any:
    """Row ids of every row whose key an earlier row (lower row id) already has."""
    pa, pc = require("pyarrow"), require("pyarrow.compute")
    table = dataset.to_table(columns=list(keys), with_row_id=True)
    if table.num_rows < 2:
        return pa.array([], pa.uint64())
    grouped = table.group_by(list(keys)).aggregate([("_rowid", "min"), ("_rowid", "count")])
    if pc.max(grouped.column("_rowid_count")).as_py() < 2:
        return pa.array([], pa.uint64())
    keep = grouped.column("_rowid_min")
    return table.column("_rowid").filter(pc.invert(pc.is_in(table.column("_rowid"), value_set=keep)))


def find_duplicates(lake: Any) -> dict[str, int]:
    """``{table: rows beyond the first per key}`` for every keyed table of the lake (0 where none)."""
    out = {}
    for name, keys in S.KEYS.items():
        if lake.has_table(name):
            out[name] = len(_extra_row_ids(lake.dataset(name), keys))
    return out


def repair_duplicates(lake: Any) -> dict[str, int]:
    """Delete every row whose key an earlier row holds; ``{table: rows deleted}`` for tables that had any."""
    removed = {}
    for name, keys in S.KEYS.items():
        if not lake.has_table(name):
            continue
        dataset = lake.dataset(name)
        extra = _extra_row_ids(dataset, keys).to_pylist()
        for i in range(0, len(extra), 10_000):
            dataset.delete(f"_rowid IN ({', '.join(str(r) for r in extra[i : i + 10_000])})")
        if extra:
            removed[name] = len(extra)
    return removed
