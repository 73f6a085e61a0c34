"""The exact in-memory dense leg against brute force, with and without filters and torch."""

import sys

import numpy as np
import pyarrow as pa
import pytest

from kbflow.retrieve.dense import ExactIndex, _Codes


def _index(n=500, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32) * 3  # not unit: the index must not care
    kinds = np.array([i % 3 for i in range(n)], dtype=np.int32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    index = ExactIndex(
        unit.copy(),
        pa.array([f"c{i}" for i in range(n)]),
        np.arange(n, dtype=np.uint64) + 1000,
        {"content_kind": _Codes(kinds, {"code": 0, "doc": 1, "record": 2})},
    )
    return index, unit, kinds, rng


def _brute(unit, q, depth, keep=None):
    scores = unit @ (q / np.linalg.norm(q))
    order = [i for i in np.argsort(-scores, kind="stable") if keep is None or keep[i]]
    return [f"c{i}" for i in order[:depth]], scores


@pytest.mark.parametrize("with_torch", [False, True])
def test_exact_top_k_matches_brute_force(monkeypatch, with_torch):
    if not with_torch:
        monkeypatch.delitem(sys.modules, "torch", raising=False)
    else:
        pytest.importorskip("torch")
    index, unit, kinds, rng = _index()
    assert index.backend == ("torch-float32" if with_torch else "numpy")
    for _ in range(20):
        q = rng.standard_normal(unit.shape[1]).astype(np.float32)
        ids, row_ids, scores = index.search(q, 30)
        want, all_scores = _brute(unit, q, 30)
        assert ids == want
        assert row_ids == [int(c[1:]) + 1000 for c in ids]
        assert np.allclose(scores, [all_scores[int(c[1:])] for c in ids], atol=1e-5)
        mask = index.mask({"content_kind": ["doc", "record"]})
        ids, _, _ = index.search(q, 30, mask)
        assert ids == _brute(unit, q, 30, kinds != 0)[0]


def test_bfloat16_candidates_are_rescored_exactly():
    torch = pytest.importorskip("torch")
    index, unit, _, rng = _index(n=3000, dim=32, seed=1)
    index._scan, index.backend = torch.from_numpy(unit).to(torch.bfloat16), "torch-bfloat16"
    for _ in range(20):
        q = rng.standard_normal(32).astype(np.float32)
        ids, _, scores = index.search(q, 30)
        assert ids == _brute(unit, q, 30)[0]
        assert scores == sorted(scores, reverse=True)


def test_mask_edge_cases():
    index, unit, _, _ = _index(n=10)
    q = unit[0]
    assert index.search(q, 5, index.mask({"content_kind": ["nothing-here"]})) == ([], [], [])
    ids, _, _ = index.search(q, 50, index.mask({"content_kind": ["code"]}))
    assert sorted(ids, key=lambda c: int(c[1:])) == ["c0", "c3", "c6", "c9"]
    assert ids[0] == "c0"
    assert index.chunk_id_of([1003, 1000]) == ["c3", "c0"]
    with pytest.raises(ValueError, match="dimensions"):
        index.search(np.ones(3, dtype=np.float32), 5)


def test_chunk_ids_map_row_ids_of_any_order_to_their_chunk_ids():
    import pyarrow as pa

    from kbflow.retrieve.dense import ChunkIds

    # Lance row ids: fragment << 32 | offset, in scan order (not sorted when fragments were rewritten)
    rows = np.array([(2 << 32) | 0, (2 << 32) | 1, 5, 7], dtype=np.uint64)
    ids = ChunkIds(pa.array(["c", "d", "a", "b"]), rows)
    assert ids.of([7, (2 << 32) | 1, 5]) == ["b", "d", "a"]
    assert ids.of([]) == []
    with pytest.raises(KeyError):
        ids.of([6])


def test_top_k_is_the_best_finite_rows_best_first_ties_by_row():
    from kbflow.retrieve.dense import top_k

    scores = np.array([0.2, -np.inf, 0.9, 0.2, 0.5, -np.inf], np.float32)
    assert top_k(scores, 3).tolist() == [2, 4, 0]
    assert top_k(scores, 10).tolist() == [2, 4, 0, 3]  # masked rows never come back, however deep
    assert top_k(scores, 0).tolist() == [] and top_k(np.full(3, -np.inf), 2).tolist() == []
    assert top_k(np.array([1.0, 1.0, 1.0]), 2).tolist() == [0, 1]


def test_load_makes_every_stored_row_a_unit_vector_and_keeps_zero_rows(tmp_path):
    lance = pytest.importorskip("lance")
    from kbflow import schema as S
    from kbflow.retrieve.dense import FILTER_COLUMNS

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((50, 8)).astype(np.float32) * 5
    vectors[7] = 0.0
    columns = {
        S.CHUNK_ID: pa.array([f"c{i}" for i in range(50)]),
        S.VECTOR: pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), 8),
        **{name: pa.array(["x"] * 50) for name in FILTER_COLUMNS},
    }
    ds = lance.write_dataset(pa.table(columns), str(tmp_path / "t.lance"))
    index = ExactIndex.load(ds)
    norms = np.linalg.norm(index.vectors, axis=1)
    assert np.allclose(np.delete(norms, 7), 1.0, atol=1e-6) and norms[7] == 0.0
    assert np.allclose(index.vectors[3], vectors[3] / np.linalg.norm(vectors[3]), atol=1e-6)
