"""A split code unit counts as one in fusion: its best chunk gets the unit's best score in each leg.

A function too long for one chunk is cut into several. The two legs may each
find a different chunk of it best (the keyword leg the chunk that names its
parameters, the dense leg the chunk whose body does what the question says),
and fused chunk by chunk, each chunk then has only one leg's evidence: the
function ranks below a shorter one that both legs find in one chunk.
:func:`pool_units` gives the unit's representative chunk (its first in the
fused ranking) the unit's best score in each leg before the legs are fused
again. A unit's other chunks keep their own scores, and a unit is never
scored above its best chunk in any leg, so a function cut into many chunks
gains nothing from their number. Hybrid mode only: one leg alone already
ranks a unit by its best chunk. A unit is a symbol of a code file
(:class:`kbflow.retrieve.signals.Groups` reads each row's); prose, pages
and a file's code outside any definition are no unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbflow.retrieve.fusion import Scored

__all__ = ["pool_units"]


def pool_units(legs: Mapping[str, Scored], order: Sequence[str], units: Sequence[int]) -> Mapping[str, Scored]:
    """``legs`` with each split unit's best score in a leg given to its representative, the unit's first chunk in
    ``order`` (a fused ranking of the legs' candidates; ``units``: the unit of each, ``-1`` for none). ``legs``
    itself, unchanged, where no unit has two chunks among the candidates."""
    unit_of = dict(zip(order, units, strict=True))
    representative: dict[int, str] = {}
    split = False
    for cid, unit in unit_of.items():
        if unit < 0:
            continue
        if unit in representative:
            split = True
        else:
            representative[unit] = cid
    if not split:
        return legs
    out: dict[str, Scored] = {}
    for leg, (ids, scores) in legs.items():
        best: dict[int, float] = {}
        for cid, score in zip(ids, scores):
            unit = unit_of.get(cid, -1)
            if unit >= 0 and score > best.get(unit, float("-inf")):
                best[unit] = score
        pooled = dict(zip(ids, scores))
        for unit, score in best.items():
            first = representative.get(unit)  # none where fusion's window left the unit out
            if first is not None and score > pooled.get(first, float("-inf")):
                pooled[first] = score
        ranked = sorted(pooled.items(), key=lambda item: -item[1])
        out[leg] = ([cid for cid, _ in ranked], [score for _, score in ranked])
    return out
