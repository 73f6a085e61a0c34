"""The Ray engine on a real multi-node cluster on this machine: a head and two worker nodes, each its own
processes (Ray's ``cluster_utils.Cluster``), one CPU each.

A Ray ingest of the sample corpus holds the same rows as a one-process ingest, ran its steps on more than one
node, re-embeds one chunk after a one-line edit, converges when a worker node dies during the embed step, and
fails with one clear line (the lake untouched) when every embedding worker is lost, when no cluster answers, or
when a node lacks the model or the lake.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import ray
from conftest import SAMPLES as CONFTEST_SAMPLES
from ray.cluster_utils import Cluster

from kbflow import schema as S
from kbflow.chunk.context import embed_keys
from kbflow.config import Settings
from kbflow.errors import ClusterError
from kbflow.lake import Lake
from kbflow.pipeline import ingest
from kbflow.pipeline.engines import ray_engine, ray_work
from kbflow.pipeline.engines.ray_pool import WORKER_PREFIX, span_size, worker_plan
from kbflow.records import Source

SAMPLES = str(CONFTEST_SAMPLES)
#: (folder or file under data/samples, type, id)
CORPUS = [
    ("docs", "docs", "sample-docs"),
    ("repo", "repo", "sample-repo"),
    ("records.jsonl", "jsonl", "sample-records"),
    ("pdf", "pdf", "sample-pdf"),
    ("tickets", "ticket", "sample-tickets"),
]
#: what a table's rows are told apart by
KEYS = {
    S.DOCUMENTS: [S.SOURCE_ID, S.UNIT_KEY],
    S.CHUNKS: [S.CHUNK_ID],
    S.EMBEDDINGS: [S.CHUNK_HASH, S.MODEL_ID],
}


@pytest.fixture(scope="module")
def cluster():
    """A head node and two worker nodes, one CPU each; ``RAY_ADDRESS`` names it while the tests run."""
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    workers = [nodes.add_node(num_cpus=1) for _ in range(2)]
    nodes.wait_for_nodes()
    old = os.environ.get("RAY_ADDRESS")
    os.environ["RAY_ADDRESS"] = nodes.address
    try:
        yield nodes, workers
    finally:
        ray_engine.disconnect()
        nodes.shutdown()
        if old is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = old


def _lake(root, name: str, corpus=CORPUS) -> Lake:
    lake = Lake(str(root / name))
    for folder, kind, sid in corpus:
        path = os.path.abspath(os.path.join(SAMPLES, folder))
        lake.register(Source(sid, kind, path))
    return lake


def _settings(lake: Lake, engine: str, **overrides) -> Settings:
    return Settings(lake=lake.uri, engine=engine, **{"write_batch_size": 2, **overrides})


def _rows(lake: Lake, name: str):
    return lake.dataset(name).to_table().sort_by([(k, "ascending") for k in KEYS[name]])


def assert_same_lake(a: Lake, b: Lake) -> None:
    """Every row of documents, chunks and embeddings equal (vectors within float tolerance)."""
    for name in KEYS:
        ta, tb = _rows(a, name), _rows(b, name)
        assert ta.num_rows == tb.num_rows > 0, name
        for column in ta.column_names:
            if column == S.VECTOR:
                va = np.array(ta.column(column).to_pylist())
                vb = np.array(tb.column(column).to_pylist())
                assert np.allclose(va, vb, atol=1e-5), name
            else:
                assert ta.column(column).equals(tb.column(column)), f"{name}.{column}"
        keys = ta.select(KEYS[name]).to_pylist()
        assert len({tuple(k.values()) for k in keys}) == len(keys), f"{name}: a repeated key"


@pytest.fixture(scope="module")
def lakes(cluster, tmp_path_factory):
    """The sample corpus ingested in this process and on the cluster."""
    root = tmp_path_factory.mktemp("ray")
    local, remote = _lake(root, "local"), _lake(root, "ray")
    done_local = ingest(local, _settings(local, "local"), checks=True)
    done_ray = ingest(remote, _settings(remote, "ray"), checks=True)
    return local, remote, done_local, done_ray


def test_a_ray_ingest_holds_the_same_lake_as_a_local_one(lakes):
    local, remote, done_local, done_ray = lakes
    assert done_local.ok and done_ray.ok, done_ray.to_dict()
    assert_same_lake(local, remote)
    assert [s.to_dict() for s in done_local.sources] == [s.to_dict() for s in done_ray.sources]


def test_the_same_search_results(lakes):
    from kbflow import Retriever

    local, remote, *_ = lakes
    for query in ("how are documents chunked", "refund policy", "parse a PDF page"):
        a = Retriever.open(local, settings=_settings(local, "local")).search(query, k=5)
        b = Retriever.open(remote, settings=_settings(remote, "ray")).search(query, k=5)
        assert [h.chunk_id for h in a] == [h.chunk_id for h in b]


def test_the_report_says_where_the_work_ran(lakes):
    *_, done_local, done_ray = lakes
    assert done_local.to_dict()["engine"] == {"name": "local", "steps": {}}
    steps = done_ray.to_dict()["engine"]["steps"]
    assert set(steps) == {"load", "chunk", "embed"}
    # one load task per file, and the embed step's spans on more than one node
    assert steps["load"]["tasks"] >= 5
    assert len(steps["load"]["nodes"]) >= 2
    assert len(steps["embed"]["nodes"]) >= 2
    node_ids = {n["NodeID"] for n in ray.nodes()}
    assert set(steps["load"]["nodes"]) <= node_ids


def test_the_dagster_runner_takes_the_engine_setting_and_says_where_each_step_ran(cluster, tmp_path):
    from kbflow.pipeline import run_ingest
    from kbflow.pipeline.results import EmbedResult
    from kbflow_dagster.corpus import _metadata

    lake = _lake(tmp_path, "lake", corpus=CORPUS[:1])
    summary = run_ingest(_settings(lake, "ray"), runner="dagster", checks=False)
    assert summary.ok, summary.to_dict()
    assert summary.engine["name"] == "ray"
    assert set(summary.engine["steps"]) == {"load", "chunk", "embed"}
    placement = {"engine": "ray", "tasks": 3, "nodes": ["n1", "n2"]}
    meta = _metadata(EmbedResult("s", "m", 5, placement=placement))
    assert meta["ray_tasks"] == 3 and meta["ray_nodes"] == 2


def test_a_one_line_edit_reembeds_one_chunk_on_the_cluster(cluster, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(os.path.join(SAMPLES, "docs"), docs)
    lake = Lake(str(tmp_path / "lake"))
    lake.register(Source("docs", "docs", str(docs)))
    settings = _settings(lake, "ray")
    first = ingest(lake, settings)
    assert first.ok and first.sources[0].chunks_embedded > 1
    page = sorted(p for p in docs.rglob("*.md"))[0]
    text = page.read_text(encoding="utf-8")
    page.write_text(text.rstrip("\n") + " Edited.\n", encoding="utf-8")  # the last paragraph's last line
    second = ingest(lake, settings)
    assert second.sources[0].status == "updated"
    assert second.sources[0].chunks_embedded == 1
    assert second.engine["steps"]["embed"]["tasks"] == 1


def _kill_a_worker_node(cluster, calls):
    nodes, workers = cluster

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 1:  # the first span is in: lose a worker node while the others embed
            nodes.remove_node(workers[-1])

    return progress


def test_the_ingest_converges_when_a_worker_node_dies_during_the_embed(cluster, lakes, tmp_path):
    local = lakes[0]
    lake = _lake(tmp_path, "lake", corpus=CORPUS[:1])
    calls: list[int] = []
    settings = _settings(lake, "ray", write_batch_size=2)
    done = ingest(lake, settings, progress=_kill_a_worker_node(cluster, calls))
    assert done.ok, done.to_dict()
    assert len(calls) >= 2
    # the same rows as the local ingest's for this source
    where = f"{S.SOURCE_ID} = 'sample-docs'"
    ours = lake.scan(S.CHUNKS, [S.CHUNK_ID, S.CHUNK_HASH]).sort_by(S.CHUNK_ID)
    theirs = local.scan(S.CHUNKS, [S.CHUNK_ID, S.CHUNK_HASH], where).sort_by(S.CHUNK_ID)
    assert ours.equals(theirs)
    # every text embedded once, to the vector the local ingest stored
    keys = embed_keys(lake.dataset(S.CHUNKS).to_table(columns=[S.CHUNK_HASH, S.EMBED_HASH, S.TEXT])).to_pylist()
    vectors = dict(zip(*lake.scan(S.EMBEDDINGS, [S.CHUNK_HASH, S.VECTOR]).to_pydict().values(), strict=True))
    assert len(vectors) == lake.scan(S.EMBEDDINGS, [S.CHUNK_HASH]).num_rows and set(vectors) == set(keys)
    stored = dict(zip(*local.scan(S.EMBEDDINGS, [S.CHUNK_HASH, S.VECTOR]).to_pydict().values(), strict=True))
    assert all(np.allclose(vectors[k], stored[k], atol=1e-5) for k in keys)
    cluster[1][-1] = cluster[0].add_node(num_cpus=1)  # the next tests get their three nodes back
    cluster[0].wait_for_nodes()


def test_losing_every_embedding_worker_fails_the_source_and_leaves_embeddings_as_they_were(cluster, tmp_path):
    lake = _lake(tmp_path, "lake", corpus=CORPUS[:1])
    settings = _settings(lake, "ray", write_batch_size=2, engine_actors=1)

    def kill_the_workers(done: int, total: int) -> None:
        for actor in ray.util.list_named_actors():
            if actor.startswith(WORKER_PREFIX):
                ray.kill(ray.get_actor(actor))

    done = ingest(lake, settings, progress=kill_the_workers)
    report = done.sources[0]
    assert report.status == "failed"
    assert "lost every embedding worker" in report.error
    assert "\n" not in report.error
    assert lake.scan(S.EMBEDDINGS, [S.CHUNK_HASH]).num_rows == 0  # nothing committed
    assert lake.get_source("sample-docs").content_hash is None  # still stale: the next ingest finishes it


def test_a_node_that_cannot_read_the_lake_is_named(cluster, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    check = ray.remote(num_cpus=0)(ray_work.check_node)
    node, problems = ray.get(check.remote(lake.uri, "a-token-never-written", Settings(lake=lake.uri, model="hash:8")))
    assert node in {n["NodeID"] for n in ray.nodes()}
    assert len(problems) == 1 and "cannot read the lake" in problems[0] and "s3://" in problems[0]


def test_a_cluster_without_the_model_is_refused_before_anything_is_written(cluster, tmp_path):
    lake = _lake(tmp_path, "lake", corpus=CORPUS[:1])
    before = lake.versions()
    settings = _settings(lake, "ray", model=str(tmp_path / "no-such-model"))
    with pytest.raises(ClusterError, match="no-such-model.*not installed") as info:
        ingest(lake, settings)
    assert "\n" not in str(info.value)
    assert lake.versions() == before


def test_no_cluster_at_ray_address_is_one_line_and_writes_nothing(tmp_path):
    lake = _lake(tmp_path, "lake", corpus=CORPUS[:1])
    before = lake.versions()
    env = dict(os.environ, RAY_ADDRESS="127.0.0.1:9", KBFLOW_LAKE=lake.uri)
    out = subprocess.run(
        [sys.executable, "-m", "kbflow.cli", "ingest", "--engine", "ray", "--runner", "local"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no Ray cluster reachable at RAY_ADDRESS=127.0.0.1:9" in lines[0], out.stderr
    assert Lake(lake.uri).versions() == before


def test_the_worker_plan_follows_the_nodes_and_their_gpus():
    cpu = [{"NodeID": "a", "Resources": {"CPU": 8}}, {"NodeID": "b", "Resources": {"CPU": 4}}]
    assert worker_plan(cpu, None) == [("a", 0, 8), ("b", 0, 4)]
    assert worker_plan(cpu, 3) == [("a", 0, 8), ("b", 0, 4), ("a", 0, 8)]
    gpu = [{"NodeID": "g", "Resources": {"CPU": 16, "GPU": 2}}, {"NodeID": "c", "Resources": {"CPU": 4}}]
    assert worker_plan(gpu, None) == [("g", 1, 8), ("g", 1, 8)]
    head = [{"NodeID": "h", "Resources": {"CPU": 0}}, *cpu]  # a head node kept free of tasks
    assert worker_plan(head, None) == [("a", 0, 8), ("b", 0, 4)]


def test_auto_keeps_a_small_source_here_and_sends_a_big_one_to_the_cluster(cluster, tmp_path, monkeypatch):
    from kbflow.pipeline import engines

    lake = _lake(tmp_path, "lake", corpus=CORPUS[:1])
    source = lake.get_source("sample-docs")
    settings = _settings(lake, "auto")
    assert engines.open_engine(settings, lake, source) is engines.LOCAL  # a few KiB: under AUTO_RAY_BYTES
    monkeypatch.setattr(engines, "AUTO_RAY_BYTES", 1)
    assert engines.open_engine(settings, lake, source).name == "ray"
    assert engines.open_engine(_settings(lake, "local"), lake, source) is engines.LOCAL


def test_every_worker_gets_spans_of_a_small_step_and_a_big_step_keeps_its_write_batches():
    assert span_size(692, 2, 512) == 87  # 8 spans: 4 for each worker
    assert span_size(100, 4, 512) == 64  # never tinier than 64 texts (a fragment each)
    assert span_size(1_000_000, 4, 512) == 2048  # at most 4 write batches
    assert span_size(3, 4, 2) == 8


def test_engine_settings_are_checked():
    with pytest.raises(Exception, match="unknown engine 'spark'"):
        Settings(engine="spark")
    with pytest.raises(Exception, match="engine_actors"):
        Settings(engine_actors=0)
    assert dataclasses.replace(Settings(), engine="auto").engine == "auto"
