"""Two writers on one lake: the second waits or is refused naming the first; duplicates never survive an ingest."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL, REPO

from kbflow import LakeBusyError, Retriever, pipeline
from kbflow import schema as S
from kbflow.cli import main
from kbflow.lake.lease import holder, lease
from kbflow.lake.repair import find_duplicates
from kbflow.pipeline.checks import check_keys_unique

HOLD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r})
    from kbflow.lake.lease import lease
    with lease({lake!r}, "kbflow ingest (test holder)"):
        print("holding", flush=True)
        time.sleep(120)
    """
)


def _hold(lake_uri):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(repo=str(REPO), lake=lake_uri)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_a_second_writer_is_refused_naming_the_holder_and_a_killed_holder_frees_the_lake(ingested, fast_settings):
    proc = _hold(ingested.uri)
    try:
        with pytest.raises(LakeBusyError) as err:
            pipeline.ingest(ingested, fast_settings)
        message = str(err.value)
        assert "kbflow ingest (test holder)" in message and f"pid {proc.pid}" in message
        assert "pass --wait SECONDS" in message and holder(ingested.uri)["pid"] == proc.pid
        out = CliRunner().invoke(main, ["--lake", ingested.uri, "ingest", "--model", FAST_MODEL])
        assert out.exit_code == 75 and "the lake is being written by" in out.output
        for args in (["tag", "t1"], ["gc", "--keep", "1"], ["remove", "docs"]):
            out = CliRunner().invoke(main, ["--lake", ingested.uri, *args])
            assert out.exit_code == 75, (args, out.output)
        t0 = time.monotonic()
        with pytest.raises(LakeBusyError, match="waited 0.5s"):
            pipeline.ingest(ingested, fast_settings, wait=0.5)
        assert time.monotonic() - t0 >= 0.5
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # the kernel released the dead holder's lock: nothing to clean up by hand
    summary = pipeline.ingest(ingested, fast_settings)
    assert [r.status for r in summary.sources] == ["unchanged"] * 3


def test_nested_leases_in_one_process_do_not_block(ingested):
    with lease(ingested.uri, "outer"):
        with lease(ingested.uri, "inner", exclusive=False):
            with lease(ingested.uri, "inner exclusive"):
                pass
    with lease(ingested.uri, "shared one", exclusive=False):
        pass


def test_two_ingests_at_once_leave_no_duplicates(tmp_path, docs_dir, repo_dir, jsonl_file):
    lake = str(tmp_path / "lake")
    for path, kind in ((docs_dir, "docs"), (repo_dir, "repo"), (jsonl_file, "jsonl")):
        assert CliRunner().invoke(main, ["--lake", lake, "add", str(path), "--type", kind]).exit_code == 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "kbflow.cli", "--lake", lake, "ingest", "--model", FAST_MODEL, "--json"]
    procs = [subprocess.Popen([*cmd, "--wait", "300"], stdout=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    statuses = sorted(tuple(sorted(s["status"] for s in json.loads(o)["sources"])) for o in outs)
    assert statuses == [("new", "new", "new"), ("unchanged", "unchanged", "unchanged")]
    from kbflow.lake import Lake

    assert not any(find_duplicates(Lake(lake)).values())


def test_duplicate_rows_are_flagged_and_repaired_by_the_next_ingest(ingested, fast_settings):
    before = [h.chunk_id for h in Retriever.open(ingested.uri).search("fusion bridge", k=5)]
    for name in (S.EMBEDDINGS, S.CHUNKS, S.DOCUMENTS):  # what two unguarded writers used to leave behind
        rows = ingested.scan(name).slice(0, 3)
        ingested.append(name, pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches()))
    check = check_keys_unique(ingested)
    assert not check.passed
    assert check.metadata["embeddings_duplicates"] == 3 and check.metadata["chunks_duplicates"] == 3
    summary = pipeline.ingest(ingested, fast_settings, checks=True)
    assert summary.repaired == {S.DOCUMENTS: 3, S.CHUNKS: 3, S.EMBEDDINGS: 3}
    assert summary.ok, summary.checks
    assert [h.chunk_id for h in Retriever.open(ingested.uri).search("fusion bridge", k=5)] == before
    assert pipeline.ingest(ingested, fast_settings).repaired == {}


@pytest.mark.parametrize("runner", ["local", "dagster"])
def test_one_huge_source_does_not_hold_up_the_others(tmp_path, monkeypatch, runner):
    """Small sources are published before a big one is even loaded (both runners)."""
    from kbflow import Lake, Settings, Source, run_ingest
    from kbflow.pipeline import load as loadmod
    from kbflow.pipeline import run as runmod
    from kbflow.pipeline import skeleton

    small, big = tmp_path / "small", tmp_path / "big"
    small.mkdir()
    big.mkdir()
    (small / "a.md").write_text("# Small\n\nPumps are primed with water.\n")
    (big / "b.md").write_text("# Big\n\n" + "Valves and seals and gaskets. " * 400 + "\n")
    lake = Lake(str(tmp_path / "lake"))
    lake.register(Source("big", "docs", str(big)))
    lake.register(Source("small", "docs", str(small)))
    monkeypatch.setattr(skeleton, "BIG_SOURCE_BYTES", 1000)  # the 12 kB folder is "huge" here
    assert runmod.plan_phases(lake, ["big", "small"]) == [["small"], ["big"]]
    seen = {}
    original = runmod.load_source if runner == "local" else loadmod.load_source

    def watching(the_lake, source_id, *args, **kwargs):
        if source_id == "big":  # the small source must be searchable already
            seen["small_published"] = bool(
                Retriever.open(the_lake.uri).search("pumps primed with water", k=3, source_ids=["small"])
            )
        return original(the_lake, source_id, *args, **kwargs)

    if runner == "local":
        monkeypatch.setattr(runmod, "load_source", watching)
    else:
        from kbflow import pipeline as pipemod

        monkeypatch.setattr(pipemod, "load_source", watching)
    summary = run_ingest(Settings.coerce(None, lake=lake.uri, model=FAST_MODEL), runner=runner)
    assert seen == {"small_published": True}
    assert len(summary.published) == 2 and summary.ok, summary


def test_a_table_another_process_just_committed_is_opened_not_replaced(tmp_path, monkeypatch):
    """A process that found a table missing and then creates it, after another process committed the table and
    its rows, opens it: replacing it would drop the rows that process reported as added."""
    from kbflow.lake import Lake

    lake = Lake(str(tmp_path / "lake"))
    schema = pa.schema([("k", pa.int64())])
    lake.append("t", pa.RecordBatchReader.from_batches(schema, [pa.record_batch([pa.array([1, 2, 3])], ["k"])]))
    monkeypatch.setattr(Lake, "has_table", lambda self, name: False)  # the view before the other's commit
    assert lake.table("t", schema=schema).count_rows() == 3
    monkeypatch.undo()
    assert lake.table("t").count_rows() == 3


def test_workers_find_the_source_tables_made_and_rows_kept(tmp_path):
    from kbflow.lake import Lake

    lake = Lake(str(tmp_path / "lake"))
    pipeline.create_source_tables(lake)
    assert {S.DOCUMENTS, S.CHUNKS, S.EMBEDDINGS} <= set(lake.table_names())
    version = lake.table(S.CHUNKS).version
    pipeline.create_source_tables(lake)  # again: nothing replaced, no new version
    assert lake.table(S.CHUNKS).version == version
