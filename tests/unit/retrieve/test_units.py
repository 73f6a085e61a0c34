"""A split code unit in fusion: its first chunk takes the unit's best score in each leg (hand-computed cases)."""

from __future__ import annotations

from kbflow.retrieve.fusion import convex
from kbflow.retrieve.units import pool_units

# the function "a" is cut in two: the dense leg finds a2 best, the keyword leg a1; "b" is one chunk both find
LEGS = {
    "dense": (["a2", "b", "a1"], [0.9, 0.8, 0.5]),
    "bm25": (["a1", "b", "a2"], [10.0, 8.0, 2.0]),
}
UNITS = {"a1": 7, "a2": 7, "b": 3}
WEIGHTS = {"dense": 1.0, "bm25": 0.5}


def _order(fused):
    return [cid for cid, _ in fused]


def test_a_unit_whose_legs_favour_different_chunks_ranks_as_one():
    fused = convex(LEGS, weights=WEIGHTS)
    # min-max per leg: b = 0.75 + 0.5 * 0.75 = 1.125; a2 = 1.0 + 0; a1 = 0 + 0.5 * 1.0
    assert _order(fused) == ["b", "a2", "a1"]
    order = _order(fused)
    pooled = pool_units(LEGS, order, [UNITS[c] for c in order])
    # a2, the unit's first chunk, takes a1's keyword score: 1.0 + 0.5 * 1.0 = 1.5 beats b's 1.125
    assert pooled["bm25"] == (["a1", "a2", "b"], [10.0, 10.0, 8.0])
    assert pooled["dense"] == LEGS["dense"]  # a2 is the unit's best dense chunk already
    again = convex(pooled, weights=WEIGHTS)
    assert _order(again)[0] == "a2"
    assert dict(again)["a2"] == 1.5
    assert dict(again)["a1"] < dict(again)["b"]  # the unit's other chunk keeps its own scores


def test_nothing_changes_without_a_split_unit():
    order = ["b", "a2", "a1"]
    assert pool_units(LEGS, order, [3, 7, -1]) is LEGS  # a1 is no unit's: a2 is alone in unit 7
    assert pool_units(LEGS, order, [-1, -1, -1]) is LEGS


def test_a_unit_never_scores_above_its_best_chunk_in_a_leg():
    legs = {"dense": (["x1", "x2", "x3", "y"], [0.6, 0.59, 0.58, 0.7])}
    order = ["y", "x1", "x2", "x3"]
    pooled = pool_units(legs, order, [1, 2, 2, 2])
    assert dict(zip(*pooled["dense"])) == {"y": 0.7, "x1": 0.6, "x2": 0.59, "x3": 0.58}  # three chunks add nothing
