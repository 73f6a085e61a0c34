"""Each text once in a result list: hits whose texts match after whitespace is normalized are one hit.

The same PDF in two folders, vendored code, a page saved twice: each copy is
a chunk of its own, and without this step a result would show the same text
two or three times in its top five. :func:`distinct` walks the fused ranking
in windows, reading the candidates' texts, and groups equal texts. Each group
takes the position of its best-ranked member and is shown by its member with
the shortest place (source URI plus path or URL; the canonical copy is usually
the shorter one), and the other members are listed on the hit
(``Hit.also_in``), so no provenance is lost and the top ``k`` are ``k``
distinct texts.

Only the windows read are grouped: a copy ranked far below the ``k``-th
distinct text is not looked for (the first window is ``max(2k, 20)``
candidates and each next one doubles).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbflow import ids
from kbflow import schema as S

__all__ = ["Distinct", "distinct", "place_length", "text_key"]

#: the least number of candidates read in the first window
MIN_WINDOW = 20

# reads ``{chunk id: row}`` (``text`` and the decoded ``hit`` payload) of the chunk ids it is given
Reader = Callable[[Sequence[str]], dict[str, dict[str, Any]]]


def text_key(text: str) -> str:
    """The key equal texts share: the hash of the text with its whitespace runs made one space."""
    return ids.text_hash(" ".join(text.split()))


def place_length(row: dict[str, Any]) -> int:
    """How long a hit row's place is: its source URI plus its path or URL (shorter wins a group)."""
    locator = row.get(S.LOCATOR) or {}
    return len(row.get(S.URI) or "") + len(locator.get("path") or locator.get("url") or "")


def decode(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Search-table rows of ``text`` and ``hit`` as flat hit rows (the ``hit`` JSON payload merged in)."""
    out = []
    for row in rows:
        row = dict(row)
        row.update(json.loads(row.pop(S.HIT)))
        out.append(row)
    return out


@dataclass
class Distinct:
    """What :func:`distinct` returns: the kept ranking, each kept id's copies, and every row it read."""

    fused: list[tuple[str, float]]
    #: kept chunk id -> the chunk ids of its copies, best-ranked first
    also_in: dict[str, list[str]] = field(default_factory=dict)
    #: chunk id -> its decoded row (``text`` plus the hit payload), for every candidate read
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)


def distinct(fused: Sequence[tuple[str, float]], k: int, read: Reader) -> Distinct:
    """The first ``k`` distinct texts of ``fused`` (``(chunk id, score)`` best first), copies grouped."""
    groups: dict[str, list[int]] = {}  # text key -> positions in fused, best first
    rows: dict[str, dict[str, Any]] = {}
    window, pos = max(2 * k, MIN_WINDOW), 0
    while pos < len(fused) and (pos == 0 or len(groups) < k):
        chunk_ids = [cid for cid, _ in fused[pos : pos + window]]
        rows.update(read(chunk_ids))
        for n, cid in enumerate(chunk_ids, start=pos):
            groups.setdefault(text_key(rows[cid][S.TEXT]), []).append(n)
        pos, window = pos + len(chunk_ids), window * 2
    out = Distinct([], rows=rows)
    for members in sorted(groups.values(), key=lambda m: m[0])[:k]:
        keep = min(members, key=lambda n: (place_length(rows[fused[n][0]]), n))
        cid = fused[keep][0]
        out.fused.append((cid, fused[members[0]][1]))
        copies = [fused[n][0] for n in members if n != keep]
        if copies:
            out.also_in[cid] = copies
    return out
