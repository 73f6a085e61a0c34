"""Crash safety: an ingest killed (SIGKILL) at several points leaves a readable lake, and the
next ingest ends in the same state as an uninterrupted run."""

import signal
import subprocess
import sys
import textwrap

import pytest
from conftest import FAST_MODEL, REPO

from kbflow import Retriever, pipeline
from kbflow import schema as S
from kbflow.config import Settings
from kbflow.lake import Lake
from kbflow.pipeline.checks import run_checks
from kbflow.records import Source

# Each point patches one function of the real pipeline to SIGKILL the process there.
KILL_POINTS = {
    # mid-commit: the embeddings stream is being written when the second batch is computed
    "during_embedding": ("kbflow.embed.hashing", "HashingEmbedder", "embed", 2),
    # between tables: documents and chunks committed, embeddings not started
    "between_tables": ("kbflow.pipeline.run", None, "embed_source", 1),
    # second source loading: the first source is complete, the search table not yet built
    "second_source": ("kbflow.pipeline.run", None, "load_source", 2),
    # search table written, its indexes not yet built
    "before_indexes": ("kbflow.index.search", None, "ensure_indexes", 1),
    # the registry commit that marks sources indexed (calls 1-6: each source's load, then its completion)
    "registry_update": ("kbflow.lake.lake", "Lake", "set_status", 7),
}

SCRIPT = textwrap.dedent(
    """
    import importlib, os, signal, sys
    sys.path.insert(0, {repo!r})
    module, cls, name, nth = {point!r}
    target = importlib.import_module(module)
    owner = getattr(target, cls) if cls else target
    original = getattr(owner, name)
    calls = [0]
    def killer(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)
    setattr(owner, name, killer)
    from kbflow import pipeline
    from kbflow.config import Settings
    pipeline.ingest({lake!r}, Settings.coerce(None, lake={lake!r}, model={model!r}, write_batch_size=2))
    print("finished without being killed")
    """
)


def _register(lake, docs_dir, repo_dir, jsonl_file):
    lake.register(Source("docs", "docs", str(docs_dir), scope="proj"))
    lake.register(Source("repo", "repo", str(repo_dir), scope="proj"))
    lake.register(Source("recs", "jsonl", str(jsonl_file)))


def _state(lake):
    chunks = lake.scan(S.CHUNKS, [S.CHUNK_ID, S.ROW_HASH]).to_pylist()
    search = lake.scan(S.SEARCH, [S.CHUNK_ID, S.ROW_HASH]).to_pylist()
    emb = lake.scan(S.EMBEDDINGS, [S.CHUNK_HASH, S.MODEL_ID]).to_pylist()
    return {
        "chunks": sorted((r[S.CHUNK_ID], r[S.ROW_HASH]) for r in chunks),
        "search": sorted((r[S.CHUNK_ID], r[S.ROW_HASH]) for r in search),
        "embeddings": sorted((r[S.CHUNK_HASH], r[S.MODEL_ID]) for r in emb),
        "documents": sorted(lake.scan(S.DOCUMENTS, [S.UNIT_HASH]).column(0).to_pylist()),
        "sources": sorted((s.source_id, s.status, s.content_hash, s.chunk_count) for s in lake.sources()),
    }


@pytest.fixture
def clean_state(tmp_path, docs_dir, repo_dir, jsonl_file):
    lake = Lake(str(tmp_path / "clean"))
    _register(lake, docs_dir, repo_dir, jsonl_file)
    pipeline.ingest(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL, write_batch_size=2))
    return _state(lake)


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_killed_ingest_recovers_to_the_clean_state(point, tmp_path, docs_dir, repo_dir, jsonl_file, clean_state):
    lake = Lake(str(tmp_path / "lake"))
    _register(lake, docs_dir, repo_dir, jsonl_file)
    script = SCRIPT.format(repo=str(REPO), point=KILL_POINTS[point], lake=lake.uri, model=FAST_MODEL)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    if point in ("during_embedding", "between_tables"):
        # the first source was loaded and chunked, not embedded: it must still show as stale
        stale = {s.source_id: s.reason for s in pipeline.stale_sources(lake)}
        assert stale.get("docs") == "never indexed", stale

    # every table is at a committed version: it opens, scans, and the search table (if any) answers
    for name in lake.table_names():
        lake.scan(name)
    if lake.has_table(S.SEARCH) and lake.scan(S.SEARCH, [S.CHUNK_ID]).num_rows:
        hits = Retriever.open(lake.uri).search("fusion", k=3)
        rows = {r[S.CHUNK_ID] for r in lake.scan(S.SEARCH, [S.CHUNK_ID]).to_pylist()}
        assert hits and {h.chunk_id for h in hits} <= rows  # it answers, from the rows committed

    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL, write_batch_size=2)
    reports = pipeline.ingest(lake, settings).sources
    assert all(r.status != "failed" for r in reports), reports
    assert _state(lake) == clean_state
    assert all(c.passed for c in run_checks(lake, FAST_MODEL)), run_checks(lake, FAST_MODEL)


def test_readers_keep_searching_during_an_ingest(ingested, fast_settings, docs_dir, repo_dir):
    import threading

    errors, answers = [], []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            try:
                r = Retriever.open(ingested.uri)
                answers.append(len(r.search("fusion bridge", k=5)))
            except Exception as exc:
                errors.append(repr(exc))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(3):
            (docs_dir / "notes.txt").write_text(f"Revision {i} of the notes about fusion.\n")
            (repo_dir / "pkg" / f"mod{i}.py").write_text(f"def f{i}():\n    return {i}\n")
            pipeline.ingest(ingested, fast_settings)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:3]
    assert answers and all(n > 0 for n in answers)
