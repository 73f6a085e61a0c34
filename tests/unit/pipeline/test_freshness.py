"""Removal, staleness, lake snapshots (tag / versions / gc) and model switches."""

import json

import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL

from kbflow import Retriever, pipeline
from kbflow import schema as S
from kbflow.cli import main
from kbflow.config import Settings
from kbflow.errors import LakeError
from kbflow.pipeline.checks import run_checks


def test_remove_source_everywhere_and_idempotent(ingested, fast_settings):
    result = pipeline.remove_source(ingested, "repo")
    assert result.registered and result.rows_removed[S.CHUNKS] > 0 and result.rows_removed[S.SOURCES] == 1
    for table in (S.DOCUMENTS, S.CHUNKS, S.SEARCH):
        assert ingested.scan(table, [S.SOURCE_ID], "source_id = 'repo'").num_rows == 0
    assert "repo" not in {s.source_id for s in ingested.sources()}
    again = pipeline.remove_source(ingested, "repo")
    assert not again.registered and sum(again.rows_removed.values()) == 0 and again.versions == {}
    assert all(c.passed for c in run_checks(ingested, fast_settings.model))
    hits = Retriever.open(ingested.uri).search("rrf fusion", k=10)
    assert hits and all(h.citation.source_id != "repo" for h in hits)


def test_cli_remove(ingested):
    runner = CliRunner()
    out = runner.invoke(main, ["--lake", ingested.uri, "remove", "recs", "--json"])
    assert out.exit_code == 0, out.output
    removed = json.loads(out.stdout)["removed"][0]
    assert removed["source_id"] == "recs" and removed["rows_removed"]["chunks"] == 2
    out = runner.invoke(main, ["--lake", ingested.uri, "remove", "recs"])
    assert out.exit_code == 0 and "was not registered" in out.stdout


def test_status_stale_lists_changed_sources_without_ingesting(ingested, docs_dir, jsonl_file):
    before = ingested.versions()
    assert pipeline.stale_sources(ingested) == []
    (docs_dir / "notes.txt").write_text("Changed notes.\n")
    jsonl_file.unlink()
    stale = {s.source_id: s.reason for s in pipeline.stale_sources(ingested)}
    assert stale == {"docs": "changed", "recs": "unreadable"}
    assert ingested.versions() == before
    out = CliRunner().invoke(main, ["--lake", ingested.uri, "status", "--stale", "--json"])
    assert out.exit_code == 3
    assert {s["source_id"] for s in json.loads(out.stdout)["stale"]} == {"docs", "recs"}


def test_tag_snapshot_reads_the_lake_as_it_was(ingested, fast_settings, docs_dir):
    tagged = ingested.tag("v1")
    assert set(tagged) == {S.SOURCES, S.DOCUMENTS, S.CHUNKS, S.EMBEDDINGS, S.SEARCH}
    with pytest.raises(LakeError, match="already exists"):
        ingested.tag("v1")
    old_search_version = tagged[S.SEARCH]
    (docs_dir / "notes.txt").write_text("Zeppelins float over the harbour at dawn.\n")
    pipeline.ingest(ingested, fast_settings)
    pipeline.remove_source(ingested, "recs")

    now = Retriever.open(ingested.uri)
    then = Retriever.open(ingested.uri, tag="v1")
    by_version = Retriever.open(ingested.uri, version=old_search_version)
    assert then.version == by_version.version == old_search_version < now.version
    assert "zeppelins" in now.search("zeppelins harbour", k=1, mode="bm25")[0].text.lower()
    assert not then.search("zeppelins harbour", k=3, mode="bm25")
    # the registry is read at the tag too: the removed source is still a valid filter there
    assert then.search("bridge", k=2, source_ids="recs")
    with pytest.raises(LakeError, match="no tag 'nope'"):
        Retriever.open(ingested.uri, tag="nope")
    with pytest.raises(LakeError, match="no version 999"):
        Retriever.open(ingested.uri, version=999)


def test_gc_keeps_latest_and_tagged_versions(ingested, fast_settings, docs_dir):
    ingested.tag("keep-me")
    for text in ("one\n", "two\n", "three\n"):
        (docs_dir / "notes.txt").write_text(text)
        pipeline.ingest(ingested, fast_settings)
    before = {t: len(v) for t, v in ingested.history().items()}
    stats = ingested.gc(keep=1)
    after = ingested.history()
    assert sum(s["versions_removed"] for s in stats.values()) > 0
    for table, rows in after.items():
        versions = [r["version"] for r in rows]
        assert len(versions) <= min(before[table], 2)
        assert any("keep-me" in r["tags"] for r in rows)
    assert Retriever.open(ingested.uri, tag="keep-me").search("bridges", k=1)
    assert Retriever.open(ingested.uri).search("three", k=1, mode="bm25")
    with pytest.raises(LakeError, match="keep must be"):
        ingested.gc(keep=0)


def test_cli_tag_versions_gc(ingested):
    runner = CliRunner()
    lake = ["--lake", ingested.uri]
    assert runner.invoke(main, [*lake, "tag", "snap"]).exit_code == 0
    assert runner.invoke(main, [*lake, "tag", "bad name"]).exit_code == 1
    out = runner.invoke(main, [*lake, "versions", "--json"])
    data = json.loads(out.stdout)
    assert set(data["tags"]["snap"]) >= {S.CHUNKS, S.SEARCH}
    out = runner.invoke(main, [*lake, "search", "bridge", "--tag", "snap", "--json", "-k", "1"])
    assert out.exit_code == 0 and json.loads(out.stdout.splitlines()[0])["chunk_id"]
    alone = runner.invoke(main, [*lake, "gc"])  # only the logs' retention: every table version stays
    assert alone.exit_code == 0 and "table versions kept" in alone.stdout, alone.output
    assert runner.invoke(main, [*lake, "gc", "--older-than", "soon"]).exit_code == 2
    out = runner.invoke(main, [*lake, "gc", "--keep", "1", "--json"])
    assert out.exit_code == 0 and S.CHUNKS in json.loads(out.stdout)["tables"]


def test_model_switch_reembeds_and_switching_back_reuses(ingested, fast_settings):
    n_chunks = ingested.scan(S.CHUNKS, [S.CHUNK_ID]).num_rows
    other = Settings.coerce(fast_settings, model="hash:32")
    summary = pipeline.ingest(ingested, other)
    reports, index = summary.sources, summary.index
    assert sum(r.chunks_embedded for r in reports) == len(
        set(ingested.scan(S.CHUNKS, [S.CHUNK_HASH]).column(0).to_pylist())
    )
    assert index.rebuilt and index.rows == n_chunks
    r = Retriever.open(ingested.uri)
    assert r.model_id == "hash:32" and r.search("bridge", k=1, mode="dense")
    embeddings_version = ingested.versions()[S.EMBEDDINGS]
    summary = pipeline.ingest(ingested, fast_settings)
    reports, index = summary.sources, summary.index
    assert sum(r.chunks_embedded for r in reports) == 0
    assert ingested.versions()[S.EMBEDDINGS] == embeddings_version
    assert index.rebuilt and Retriever.open(ingested.uri).model_id == FAST_MODEL
    assert all(c.passed for c in run_checks(ingested, fast_settings.model))
