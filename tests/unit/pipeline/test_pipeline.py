import json
import re

import pytest
from conftest import FAST_MODEL

from kbflow import pipeline
from kbflow import schema as S
from kbflow.errors import LakeError, SourceError, SourceNotFoundError
from kbflow.lake import Lake
from kbflow.pipeline.checks import run_checks
from kbflow.records import Source


def data_versions(lake):
    return {k: v for k, v in lake.versions().items() if k != S.SOURCES}


def test_ingest_fills_every_table_and_checks_pass(ingested):
    versions = ingested.versions()
    assert set(versions) == {S.SOURCES, S.DOCUMENTS, S.CHUNKS, S.EMBEDDINGS, S.SEARCH}
    assert all(c.passed for c in run_checks(ingested, FAST_MODEL)), run_checks(ingested, FAST_MODEL)
    statuses = {s.source_id: (s.status, s.chunk_count) for s in ingested.sources()}
    assert all(st == "indexed" and n > 0 for st, n in statuses.values())


def test_reingest_unchanged_touches_nothing(ingested, fast_settings):
    before = data_versions(ingested)
    summary = pipeline.ingest(ingested, fast_settings)
    reports, index = summary.sources, summary.index
    assert {r.status for r in reports} == {"unchanged"}
    assert all(r.chunks_embedded == 0 for r in reports)
    assert data_versions(ingested) == before
    assert index.rows_upserted == 0 and index.rows_deleted == 0


def test_one_function_edit_embeds_one_chunk(ingested, fast_settings, repo_dir):
    path = repo_dir / "pkg" / "fuse.py"
    path.write_text(path.read_text().replace("self.docs.append(doc)", "self.docs.append(str(doc))"))
    summary = pipeline.ingest(ingested, fast_settings)
    reports, _index = summary.sources, summary.index
    by_id = {r.source_id: r for r in reports}
    assert by_id["repo"].status == "updated"
    assert by_id["repo"].chunks_embedded == 1
    assert by_id["repo"].chunks_added == 1 and by_id["repo"].chunks_removed == 1
    assert by_id["docs"].status == by_id["recs"].status == "unchanged"
    assert all(c.passed for c in run_checks(ingested, fast_settings.model))


def test_deleted_file_removes_its_chunks(ingested, fast_settings, docs_dir):
    (docs_dir / "notes.txt").unlink()
    reports = pipeline.ingest(ingested, fast_settings, ["docs"]).sources
    assert reports[0].chunks_removed >= 1
    paths = {r[S.LOCATOR]["path"] for r in ingested.scan(S.SEARCH, [S.LOCATOR], "source_id = 'docs'").to_pylist()}
    assert paths == {"guide.md"}


@pytest.mark.parametrize("breakage", ["all_invalid_utf8", "missing_folder", "empty_folder"])
def test_bad_input_fails_clearly_and_leaves_tables_untouched(ingested, fast_settings, docs_dir, breakage):
    before = data_versions(ingested)
    rows_before = ingested.scan(S.CHUNKS, [S.CHUNK_ID]).num_rows
    if breakage == "all_invalid_utf8":
        for p in docs_dir.iterdir():
            p.write_bytes(b"caf" + bytes(range(128, 256)))
        expected = "all 2 files were left out: guide.md (not valid UTF-8"
    elif breakage == "missing_folder":
        for p in docs_dir.iterdir():
            p.unlink()
        docs_dir.rmdir()
        expected = "no such file or folder"
    else:
        for p in docs_dir.iterdir():
            p.unlink()
        expected = "no Markdown/text files"
    with pytest.raises(SourceError, match=re.escape(expected)):
        pipeline.load_source(ingested, "docs")
    reports = pipeline.ingest(ingested, fast_settings).sources
    failed = {r.source_id: r.error for r in reports if r.status == "failed"}
    assert list(failed) == ["docs"] and expected.split(": ")[-1].strip() in failed["docs"]
    assert data_versions(ingested) == before
    assert ingested.scan(S.CHUNKS, [S.CHUNK_ID]).num_rows == rows_before
    source = ingested.get_source("docs")
    assert source.status == "failed" and expected.split(": ")[-1].strip() in source.last_error


def test_a_duplicate_record_id_keeps_the_first_record_and_reports_the_others(tmp_path, fast_settings):
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"_id": f"d{i}", "text": f"record {i}"} for i in range(5)]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lake = Lake(tmp_path / "lake")
    lake.register(Source("corpus", "jsonl", str(corpus)))
    pipeline.ingest(lake, fast_settings)
    extra = [{"_id": "x", "text": "new"}, {"_id": "d3", "text": "again"}, {"_id": "e", "text": ""}, "{broken"]
    corpus.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in [*rows, *extra]))
    report = pipeline.ingest(lake, fast_settings).sources[0]
    assert report.status == "partial" and report.error is None, report
    source = lake.get_source("corpus")
    assert source.status == "partial" and source.chunk_count == 6
    problems = {i["path"]: i["reason"] for i in source.issues}
    assert problems["corpus.jsonl:7"] == "duplicate _id 'd3' (first on line 4, which is kept)"
    assert "no text" in problems["corpus.jsonl:8"] and "invalid JSON" in problems["corpus.jsonl:9"]
    texts = lake.scan(S.DOCUMENTS, [S.TEXT]).column(0).to_pylist()
    assert "record 3" in texts and "again" not in texts and "new" in texts


def test_many_duplicate_ids_are_counted_past_the_listed_ones(tmp_path, fast_settings):
    from kbflow.sources.base import MAX_LISTED

    corpus = tmp_path / "corpus.jsonl"
    rows = [{"_id": "same" if i % 2 else f"r{i}", "text": f"record {i}"} for i in range(2 * MAX_LISTED + 11)]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lake = Lake(tmp_path / "lake")
    lake.register(Source("corpus", "jsonl", str(corpus)))
    pipeline.ingest(lake, fast_settings)
    issues = lake.get_source("corpus").issues
    assert len(issues) == MAX_LISTED + 1 and issues[0]["path"] == "corpus.jsonl:4"
    repeats = sum(r["_id"] == "same" for r in rows) - 1  # the first is kept
    assert issues[-1]["reason"] == f"{repeats - MAX_LISTED} more duplicate _ids (first {MAX_LISTED} listed)"


def test_a_repeated_ticket_post_keeps_the_first(tmp_path, fast_settings):
    folder = tmp_path / "tickets"
    folder.mkdir()
    issue = {"number": 7, "title": "Crash", "body": "It crashes.", "comments": [{"id": 1, "body": "Same here."}]}
    again = {**issue, "comments": [{"id": 1, "body": "A repeat."}, {"id": 2, "body": "Fixed in 1.2."}]}
    (folder / "export.json").write_text(json.dumps([issue, again, {"title": "no number"}]))
    lake = Lake(tmp_path / "lake")
    lake.register(Source("t", "ticket", str(folder)))
    pipeline.ingest(lake, fast_settings)
    source = lake.get_source("t")
    assert source.status == "partial"
    reasons = sorted(f"{i['path']}: {i['reason']}" for i in source.issues)
    assert reasons == [
        'export.json (issue #3 of the file): has no "number"; ticket exports need GitHub\'s issue shape',
        "export.json (issue 7): comment 1 appears again; the first is kept",
        "export.json (issue 7): issue 7 appears again; the first is kept",
    ]
    texts = lake.scan(S.DOCUMENTS, [S.TEXT]).column(0).to_pylist()
    assert "Same here." in texts and "Fixed in 1.2." in texts and "A repeat." not in texts


def test_registry_rules(lake_path, docs_dir, repo_dir):
    lake = Lake(lake_path)
    lake.register(Source("docs", "docs", str(docs_dir)))
    with pytest.raises(SourceError, match="already registered for docs"):
        lake.register(Source("docs", "repo", str(repo_dir)))
    with pytest.raises(SourceError, match="already registered as source 'docs'"):
        lake.register(Source("other", "docs", str(docs_dir)))
    again = lake.register(Source("docs", "docs", str(docs_dir), scope="p2"))
    assert again.scope == "p2" and len(lake.sources()) == 1
    with pytest.raises(SourceNotFoundError, match="no source 'zzz'"):
        lake.get_source("zzz")


def test_lake_path_that_is_a_file(tmp_path):
    f = tmp_path / "lake"
    f.write_text("not a lake")
    with pytest.raises(LakeError, match="is a file"):
        Lake(str(f))
    assert f.read_text() == "not a lake"


def test_scope_change_rewrites_chunk_rows_without_reembedding(ingested, fast_settings, docs_dir):
    ingested.register(Source("docs", "docs", str(docs_dir), scope="newscope"))
    summary = pipeline.ingest(ingested, fast_settings, ["docs"])
    reports, _index = summary.sources, summary.index
    assert reports[0].chunks_embedded == 0
    scopes = set(ingested.scan(S.SEARCH, [S.SCOPE], "source_id = 'docs'").column(0).to_pylist())
    assert scopes == {"newscope"}


def test_embeddings_stream_in_batches(ingested, fast_settings, tmp_path):
    big = tmp_path / "big.jsonl"
    big.write_text(
        "".join(f'{{"_id": "r{i}", "text": "record number {i} about topic {i % 7}"}}\n' for i in range(1200))
    )
    ingested.register(Source("big", "jsonl", str(big)))
    calls = []
    settings = fast_settings.__class__.coerce(fast_settings, write_batch_size=500)
    pipeline.load_source(ingested, "big")
    pipeline.chunk_source(ingested, "big", settings)
    result = pipeline.embed_source(ingested, "big", settings, progress=lambda n, total: calls.append((n, total)))
    assert result.chunks_embedded == 1200
    assert calls == [(500, 1200), (500, 1200), (200, 1200)]


def test_spill_round_trips_rows_and_batches():
    import pyarrow as pa

    from kbflow.lake.spill import Spill

    schema = pa.schema([("id", pa.string()), ("n", pa.int64())])
    with Spill(schema, rows_per_batch=3) as spill:
        spill.extend({"id": str(i), "n": i} for i in range(7))
        spill.write(pa.RecordBatch.from_pylist([{"id": "x", "n": 99}], schema=schema))
        assert spill.num_rows == 8
        table = spill.reader().read_all()
        path = spill.path
    assert table.column("n").to_pylist() == [0, 1, 2, 3, 4, 5, 6, 99]
    import os

    assert not os.path.exists(path)


def test_many_changed_chunks_sync_through_arrow_matching(ingested, fast_settings, docs_dir, monkeypatch):
    """Large id sets are matched in Arrow instead of a SQL IN list; the result is the same."""
    from kbflow.index import search

    monkeypatch.setattr(search, "_SQL_IN_MAX", 0)
    (docs_dir / "guide.md").write_text((docs_dir / "guide.md").read_text() + "\n\n## Added\n\nA new closing section.\n")
    summary = pipeline.ingest(ingested, fast_settings, ["docs"])
    reports, index = summary.sources, summary.index
    assert reports[0].status == "updated" and index.rows_upserted >= 1
    assert all(c.passed for c in run_checks(ingested, fast_settings.model))


def test_overwrite_streams_fragments_and_commits_once(tmp_path):
    import pyarrow as pa

    lake = Lake(str(tmp_path / "lake"))
    schema = pa.schema([("n", pa.int64())]).with_metadata({b"k": b"v"})

    def reader(total, step=100):
        batches = (
            pa.record_batch([pa.array(range(i, min(i + step, total)))], schema=schema) for i in range(0, total, step)
        )
        return pa.RecordBatchReader.from_batches(schema, batches)

    first = lake.overwrite("t", reader(1000), rows_per_fragment=250)
    ds = lake.dataset("t")
    assert ds.count_rows() == 1000 and len(ds.get_fragments()) == 4  # four files, one commit
    assert ds.schema.metadata == {b"k": b"v"}
    second = lake.overwrite("t", reader(10), rows_per_fragment=250)
    assert second == first + 1 and lake.dataset("t").count_rows() == 10
    assert lake.dataset("t", at=first).count_rows() == 1000  # the old version is intact
    assert lake.overwrite("empty", reader(0)) >= 1 and lake.dataset("empty").count_rows() == 0
