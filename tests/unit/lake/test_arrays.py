"""Arrow set helpers (kbflow.lake.arrays): the same answers as Python sets."""

import pyarrow as pa

from kbflow.lake import arrays


def test_arrow_set_helpers_match_python_sets():
    a = pa.chunked_array([["u1", "u2"], ["u2", "u3", None]])
    assert sorted(arrays.distinct(a).to_pylist()) == ["u1", "u2", "u3"]
    assert arrays.without(arrays.distinct(a), pa.array(["u2"])).to_pylist() == ["u1", "u3"]
    assert arrays.count_missing(pa.array(["u1", "u9"]), a) == 1
    assert arrays.count_missing(pa.array(["u1"]), pa.array([], pa.string())) == 1
    # as Python compares: None != "x" is stale, None == None is not
    assert arrays.differs(pa.array(["x", None]), "x") and not arrays.differs(pa.array(["x", "x"]), "x")
    assert not arrays.differs(pa.array([None]), None) and not arrays.differs(pa.array([], pa.string()), "x")
