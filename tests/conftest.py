"""Shared fixtures: tiny corpora built per test, a temporary lake, the fast hashing embedder."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "data" / "samples"
FAST_MODEL = "hash:64"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# ONNX exports of the model go to a folder of this test session, never the user's ~/.cache/kbflow;
# the process that made it removes it at exit (xdist workers inherit the variable and leave it be)
if "KBFLOW_CACHE" not in os.environ:
    os.environ["KBFLOW_CACHE"] = tempfile.mkdtemp(prefix="kbflow-test-cache-")
    atexit.register(shutil.rmtree, os.environ["KBFLOW_CACHE"], ignore_errors=True)


#: the keys of a hit's JSON object (``kbflow search --json``, REST) and of its citation
HIT_KEYS = {
    "rank", "score", "relevance", "dense_score", "bm25_score", "dense_rank", "bm25_rank", "fused_rank",
    "chunk_id", "content_kind", "scope", "query_id", "text", "citation", "also_in", "role",
}  # fmt: skip
CITATION_KEYS = {"source_id", "source_type", "uri", "title", "content_hash", "chunk_hash", "locator", "label"}


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux lists them (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


#: onnxruntime's int8 products keep their accuracy only on CPUs with VNNI; elsewhere its u8s8 kernel loses it
#: (measured on an AMD EPYC without AVX-512: int8 vectors at lowest cosine 0.960 to fp32, against 0.99 with VNNI)
HAS_VNNI = bool(cpu_flags() & {"avx512_vnni", "avx_vnni", "amx_int8"})
requires_vnni = pytest.mark.skipif(
    not HAS_VNNI,
    reason="int8 accuracy is measured on CPUs with VNNI (this one has none: onnxruntime's u8s8 kernel loses it)",
)


@contextlib.contextmanager
def local_http(handler, monkeypatch):
    """A threaded HTTP server on 127.0.0.1 serving ``handler``, let through the fetch guard; yields its base URL."""
    from http.server import ThreadingHTTPServer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    port = httpd.server_address[1]
    monkeypatch.setenv("KBFLOW_FETCH_ALLOW_HOSTS", f"127.0.0.1:{port}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        httpd.shutdown()


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "guide.md").write_text(
        "# Guide\n\n## Install\n\nRun pip install kbflow. Then run make demo.\n\n"
        "## Fusion\n\nRanks from the dense and keyword legs are fused by reciprocal rank fusion.\n"
    )
    (d / "notes.txt").write_text("Plain notes about bridges and rivers.\n\nA second paragraph.\n")
    return d


@pytest.fixture
def repo_dir(tmp_path: Path) -> Path:
    d = tmp_path / "repo"
    (d / "pkg").mkdir(parents=True)
    (d / "pkg" / "fuse.py").write_text(
        '"""Fusion helpers."""\n\nimport math\n\n\n'
        'def rrf(rankings, k=60):\n    """Reciprocal rank fusion."""\n    scores = {}\n'
        "    for ranking in rankings:\n        for rank, doc in enumerate(ranking, 1):\n"
        "            scores[doc] = scores.get(doc, 0) + 1 / (k + rank)\n    return scores\n\n\n"
        "class Index:\n    def add(self, doc):\n        self.docs.append(doc)\n"
    )
    (d / "README.md").write_text("# Repo\n\nA tiny repository.\n")
    (d / "config.toml").write_text("[tool]\nname = 'x'\n")
    return d


@pytest.fixture
def jsonl_file(tmp_path: Path) -> Path:
    p = tmp_path / "corpus.jsonl"
    rows = [
        {"_id": "d1", "title": "Bridges", "text": "The longest suspension bridge main span is in Turkey."},
        {"_id": "d2", "title": "", "text": "Rivers carry water to the sea."},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


@pytest.fixture
def lake_path(tmp_path: Path) -> str:
    return str(tmp_path / "lake")


@pytest.fixture
def fast_settings(lake_path: str):
    from kbflow.config import Settings

    return Settings.coerce(None, lake=lake_path, model=FAST_MODEL)


@pytest.fixture
def ingested(lake_path, fast_settings, docs_dir, repo_dir, jsonl_file):
    """A lake with the three tiny sources ingested by the library pipeline (no Dagster)."""
    from kbflow import pipeline
    from kbflow.lake import Lake
    from kbflow.records import Source

    lake = Lake(lake_path)
    lake.register(Source("docs", "docs", str(docs_dir), scope="proj"))
    lake.register(Source("repo", "repo", str(repo_dir), scope="proj"))
    lake.register(Source("recs", "jsonl", str(jsonl_file)))
    reports = pipeline.ingest(lake, fast_settings).sources
    assert all(r.status == "new" for r in reports), reports
    return lake


#: the tiers, set by the folder a test file lives in (never by a hand-kept list): ``unit`` (each step on tiny inputs:
#: real Lance, the model-free ``hash:64`` embedder; no subprocess, server, Dagster or real model; ``make test-unit``),
#: ``integration`` (several steps, a server, a browser, a subprocess) and ``e2e`` (the real model, Dagster, Ray)
TIERS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(config, items):
    """Mark each test with its folder's tier (``tests/unit/...`` is ``unit``)."""
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(REPO / "tests").parts
        if parts and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))
