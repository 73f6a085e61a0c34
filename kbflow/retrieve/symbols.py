"""Symbol first: a query made only of code names gets the chunks that define them first.

``Sniffer.has_header``, ``json.dumps`` or ``makeRecord`` asks where a name is
defined, as an editor's "go to symbol" does. :func:`defining` finds the code
chunks whose symbol is the last name and whose scope (enclosing symbols, or
folders and file names of the path) holds the others, and the chunk of a
whole enclosing class where the method is inside it; :func:`symbol_first`
puts them before the fused ranking. The names come from
:func:`kbflow.text.terms.query_identifiers`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kbflow import schema as S
from kbflow.config import MAX_K
from kbflow.lake.sql import sql_in

__all__ = ["defines", "defining", "symbol_first"]

_SYMBOL_PARTS = re.compile(r"\.|::?|#|\s+")


def defines(locator: Mapping[str, Any], parts: list[str]) -> bool:
    """Whether the code chunk at ``locator`` defines the name ``parts``: its symbol ends in the last part,
    and every other part is a scope of its symbol or a folder or file name of its path."""
    symbol = [p.lower() for p in _SYMBOL_PARTS.split(locator.get("symbol") or "") if p]
    if not symbol or symbol[-1] != parts[-1].lower():
        return False
    path = [os.path.splitext(p)[0].lower() for p in (locator.get("path") or "").split("/")]
    return all(p.lower() in symbol[:-1] or p.lower() in path for p in parts[:-1])


def symbol_first(fused: list[tuple[str, float]], defined: list[tuple[str, int]]) -> list[tuple[str, float]]:
    """``fused`` with the chunks that define the query's names first: definitions, then enclosing chunks,
    each group in fused order. Each is scored its own fused score plus a step per group below it, the step
    larger than any gap between two scores, so scores still fall down the list."""
    score = dict(fused)
    top = max(score.values(), default=0.0)
    step = top - min([0.0, *score.values()]) + 1.0  # more than any two scores differ (cosines can be < 0)
    groups = max(group for _, group in defined) + 1
    first = sorted(
        ((cid, score.get(cid, 0.0) + step * (groups - group)) for cid, group in dict(defined).items()),
        key=lambda item: -item[1],
    )
    chosen = {cid for cid, _ in first}
    return first + [(c, v) for c, v in fused if c not in chosen]


def defining(
    dataset, names: list[list[str]], filters: Mapping[str, Sequence[str]], row_of: dict[str, int]
) -> list[tuple[str, int]]:
    """``(chunk id, 0 or 1)`` of the code in the search-table version ``dataset`` that defines the names of a
    names-only query (``Sniffer.has_header``: the symbol ``has_header`` in the class ``Sniffer``, or the
    chunk of the whole class where it is one; ``json.dumps``: ``dumps`` in a file under ``json``): 0 for a
    definition, 1 for an enclosing chunk, among the rows passing ``filters``; ``row_of`` gets their row ids."""
    if S.SYMBOL_NAME not in dataset.schema.names:  # a table from before the column: rebuilt on sync
        return []
    # the name itself, or the class around it where that class is one chunk (``Index.add`` in ``Index``)
    wanted = sorted({p.lower() for parts in names for p in parts[-2:]})
    where = " AND ".join(sql_in(column, values) for column, values in {**filters, S.SYMBOL_NAME: wanted}.items())
    rows = dataset.to_table(
        columns=[S.CHUNK_ID, S.LOCATOR, S.TEXT], filter=where, limit=MAX_K, with_row_id=True
    ).to_pylist()
    exact = [r for r in rows if any(defines(r[S.LOCATOR] or {}, parts) for parts in names)]
    inside = [
        r
        for r in rows
        if r not in exact
        and any(
            len(parts) > 1
            and defines(r[S.LOCATOR] or {}, parts[:-1])
            and re.search(rf"\b{re.escape(parts[-1])}\b", r[S.TEXT])
            for parts in names
        )
    ]
    for r in exact + inside:
        row_of.setdefault(r[S.CHUNK_ID], r["_rowid"])
    return [(r[S.CHUNK_ID], 0) for r in exact] + [(r[S.CHUNK_ID], 1) for r in inside]
