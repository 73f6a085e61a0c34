"""A lake's versions (kbflow.lake.snapshots): history, lake-wide tags and gc."""

import pyarrow as pa
import pytest

from kbflow.errors import LakeError
from kbflow.lake.snapshots import Snapshots

SCHEMA = pa.schema([("id", pa.int64())])


def _write(lake: Snapshots, name: str, *ids: int) -> int:
    reader = pa.RecordBatchReader.from_batches(SCHEMA, [pa.record_batch([pa.array(ids, pa.int64())], schema=SCHEMA)])
    return lake.overwrite(name, reader)


def test_a_tag_names_every_tables_version_and_reads_back(tmp_path):
    lake = Snapshots(tmp_path / "lake")
    with pytest.raises(LakeError, match="no tables yet"):
        lake.tag("empty")
    a1, b1 = _write(lake, "a", 1), _write(lake, "b", 2)
    assert lake.tag("v1") == {"a": a1, "b": b1}
    _write(lake, "a", 1, 3)
    assert lake.snapshots() == {"v1": {"a": a1, "b": b1}}
    assert lake.dataset("a", at="v1").count_rows() == 1 and lake.dataset("a").count_rows() == 2
    history = lake.history()
    assert [v["tags"] for v in history["a"]] == [["v1"], []]
    with pytest.raises(LakeError, match="already exists"):
        lake.tag("v1")
    with pytest.raises(LakeError, match="tag names are letters"):
        lake.tag("no spaces")


def test_gc_keeps_tagged_and_latest_versions(tmp_path):
    lake = Snapshots(tmp_path / "lake")
    tagged = _write(lake, "a", 1)
    lake.tag("keep")
    for n in range(3):
        _write(lake, "a", n)
    with pytest.raises(LakeError, match="needs keep"):
        lake.gc()
    with pytest.raises(LakeError, match="keep must be >= 1"):
        lake.gc(keep=0)
    removed = lake.gc(keep=1)
    assert removed["a"]["versions_removed"] == 2  # the two between the tag and the latest
    left = [v["version"] for v in lake.history()["a"]]
    assert tagged in left and left[-1] == lake.dataset("a").version and len(left) == 2
