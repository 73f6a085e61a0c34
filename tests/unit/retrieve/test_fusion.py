import pytest

from kbflow.errors import ConfigError
from kbflow.retrieve.fusion import rrf


def test_rrf_hand_computed():
    fused = dict(rrf({"dense": ["a", "b", "c"], "bm25": ["b", "d"]}, k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["d"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63)
    assert [d for d, _ in rrf({"dense": ["a", "b", "c"], "bm25": ["b", "d"]})] == ["b", "a", "d", "c"]


def test_rrf_weights_and_ties():
    fused = rrf({"dense": ["a"], "bm25": ["b"]}, k=1, weights={"dense": 2.0})
    assert fused == [("a", 1.0), ("b", 0.5)]
    # equal scores: the better single-leg rank first, then the id
    assert [d for d, _ in rrf({"x": ["q", "p"], "y": ["p", "q"]})] == ["p", "q"]


def test_rrf_rejects_bad_parameters():
    with pytest.raises(ConfigError):
        rrf({"x": ["a"]}, k=0)
    with pytest.raises(ConfigError):
        rrf({"x": ["a"]}, weights={"x": -1})


def test_convex_combination_by_hand():
    from kbflow.retrieve.fusion import convex

    legs = {"dense": (["a", "b", "c"], [0.9, 0.5, 0.1]), "bm25": (["c", "d"], [12.0, 2.0])}
    # dense normalized: a 1.0, b 0.5, c 0.0; bm25: c 1.0, d 0.0
    assert convex(legs) == [("a", 1.0), ("c", 1.0), ("b", 0.5), ("d", 0.0)]
    weighted = dict(convex(legs, weights={"dense": 0.3, "bm25": 0.7}))
    assert weighted["c"] == pytest.approx(0.7) and weighted["a"] == pytest.approx(0.3)
    assert convex({"dense": (["x"], [0.2])}) == [("x", 1.0)]  # one candidate: no spread to normalize by
    with pytest.raises(ConfigError):
        convex({"dense": (["a"], [0.1, 0.2])})


def test_a_window_makes_scores_independent_of_depth():
    """With ``window`` W a leg's scores run from its (W+1)-th score (0) to its best (1): the same whether it
    returned W+1 candidates or many more."""
    from kbflow.retrieve.fusion import FUSIONS, convex

    deep = {"dense": (list("abcdef"), [0.9, 0.8, 0.6, 0.5, 0.2, 0.1]), "bm25": (list("dcaxyz"), [9, 7, 5, 3, 2, 1])}
    shallow = {leg: (ids[:4], values[:4]) for leg, (ids, values) in deep.items()}
    fused = dict(convex(deep, window=3))
    assert fused["a"] == pytest.approx(1.0 + (5 - 3) / (9 - 3))  # dense (0.9-0.5)/(0.9-0.5), bm25 (5-3)/(9-3)
    assert fused["e"] == 0.0 and fused["x"] == 0.0  # below the floor: kept, scoring nothing
    for name, fuse in FUSIONS.items():
        top = fuse(deep, window=3)[:4]
        assert top == fuse(shallow, window=3)[:4], name


def test_rrf_window_ranks_equal_scores_alike():
    from kbflow.retrieve.fusion import FUSIONS

    legs = {"bm25": (["a", "b", "c", "d"], [5.0, 5.0, 3.0, 1.0])}
    fused = dict(FUSIONS["rrf"](legs, rrf_k=60, window=2))
    assert fused["a"] == fused["b"] == pytest.approx(1 / 61)  # equal scores share rank 1
    assert fused["c"] == 0.0 and fused["d"] == 0.0  # the 3rd score (3.0) is the floor: c does not beat it
