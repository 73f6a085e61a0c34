"""A lake's tables (kbflow.lake.tables): created, written in bounded files, read at a version."""

import pyarrow as pa
import pytest

from kbflow.errors import LakeError, LakeNotFoundError, VersionNotFoundError
from kbflow.lake.tables import Tables

SCHEMA = pa.schema([("id", pa.int64()), ("text", pa.string())])


def _rows(start: int, n: int) -> pa.RecordBatchReader:
    """Rows ``start`` to ``start + n`` in batches of two."""
    batches = [
        pa.record_batch(
            [pa.array(range(i, min(i + 2, start + n))), pa.array([f"t{j}" for j in range(i, min(i + 2, start + n))])],
            schema=SCHEMA,
        )
        for i in range(start, start + n, 2)
    ]
    return pa.RecordBatchReader.from_batches(SCHEMA, batches)


def test_overwrite_and_append_are_one_version_each_in_files_of_bounded_rows(tmp_path):
    tables = Tables(tmp_path / "lake")
    assert tables.table_names() == []
    first = tables.overwrite("t", _rows(0, 10), rows_per_fragment=4)
    second = tables.append("t", _rows(10, 5), rows_per_fragment=4)
    assert second == first + 1 and tables.table_names() == ["t"]
    ds = tables.dataset("t")
    assert ds.count_rows() == 15
    assert sorted(f.count_rows() for f in ds.get_fragments()) == [1, 2, 4, 4, 4]  # 10 = 4 + 4 + 2, 5 = 4 + 1
    assert tables.dataset("t", at=first).count_rows() == 10
    assert tables.scan("t", ["id"], where="id >= 12").column("id").to_pylist() == [12, 13, 14]
    taken = Tables.take(ds, [3, 0], ["id"])
    assert sorted(taken.column("id").to_pylist()) == [0, 3]


def test_reading_what_is_not_there_names_it(tmp_path):
    tables = Tables(tmp_path / "lake")
    assert tables.scan("sources").num_rows == 0  # a known table not written yet reads empty
    with pytest.raises(LakeNotFoundError, match="no 'chunks' table yet"):
        tables.dataset("chunks")
    tables.overwrite("t", _rows(0, 2))
    with pytest.raises(VersionNotFoundError, match="no version 99"):
        tables.dataset("t", at=99)
    with pytest.raises(VersionNotFoundError, match="no tag 'nope'"):
        tables.dataset("t", at="nope")


def test_a_missing_lake_is_created_or_refused_and_a_file_is_never_a_lake(tmp_path):
    with pytest.raises(LakeNotFoundError, match="no lake here"):
        Tables(tmp_path / "absent", create=False)
    assert (Tables(tmp_path / "made").uri).endswith("made") and (tmp_path / "made").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(LakeError, match="is a file, not a lake folder"):
        Tables(tmp_path / "file")


def test_delete_where_writes_only_the_tables_it_changes(tmp_path):
    tables = Tables(tmp_path / "lake")
    tables.overwrite("a", _rows(0, 3))
    tables.overwrite("b", _rows(10, 3))
    before = tables.versions()
    assert tables.delete_where(["a", "b", "absent"], "id = 1") == {"a": 1, "b": 0}
    after = tables.versions()
    assert after["a"] == before["a"] + 1 and after["b"] == before["b"]
