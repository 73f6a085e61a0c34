"""`dagster dev` on the repo's code location: started on a free port, asked over its GraphQL endpoint for the
asset graph, the partitions, the asset checks and the schedules, then stopped."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from conftest import REPO

QUERY = """
{
  assetNodes {
    assetKey { path }
    isPartitioned
    isObservable
    partitionKeys
    assetChecksOrError { __typename ... on AssetChecks { checks { name } } }
  }
  repositoriesOrError {
    ... on RepositoryConnection { nodes { schedules { name cronSchedule } sensors { name } } }
  }
}
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dagster() -> str:
    found = Path(sys.executable).parent / "dagster"
    return str(found) if found.exists() else (shutil.which("dagster") or "dagster")


def test_dagster_dev_serves_the_graph_checks_and_partitions(ingested, tmp_path):
    from kbflow.records import Source
    from kbflow_dagster.ingest import _sync_partitions, instance_for

    docs = ingested.get_source("docs")
    ingested.register(Source(**{**docs.__dict__, "options": {"refresh": "0 */6 * * *"}}))
    _sync_partitions(instance_for(ingested), {s.source_id for s in ingested.sources()})
    home = Path(ingested.uri) / ".dagster"  # the instance `kbflow ingest` uses: dagster dev sees its runs
    port = _port()
    env = {**os.environ, "DAGSTER_HOME": str(home), "KBFLOW_LAKE": ingested.uri, "KBFLOW_AUTOMATION_SECONDS": "3600"}
    log = tmp_path / "dagster-dev.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [_dagster(), "dev", "-m", "kbflow_dagster.definitions", "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/graphql"
        deadline = time.monotonic() + 180
        data = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                response = httpx.post(url, json={"query": QUERY}, timeout=10)
                if response.status_code == 200 and response.json().get("data", {}).get("assetNodes"):
                    data = response.json()["data"]
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        assert data is not None, "dagster dev did not answer in 180 s: " + log.read_text()[-3000:]
        nodes = {"/".join(n["assetKey"]["path"]): n for n in data["assetNodes"]}
        assert {"source_files", "documents", "chunks", "embeddings", "search_index", "claims_evidence"} <= set(nodes)
        assert nodes["documents"]["isPartitioned"] and nodes["source_files"]["isObservable"]
        assert sorted(nodes["documents"]["partitionKeys"]) == ["docs", "recs", "repo"]
        checks = {c["name"] for n in nodes.values() for c in (n["assetChecksOrError"].get("checks") or [])}
        assert {"embeddings_cover_chunks", "search_matches_chunks", "keys_unique", "claims_evidence_fresh"} <= checks
        [repo] = data["repositoriesOrError"]["nodes"]
        assert {"name": "refresh_docs", "cronSchedule": "0 */6 * * *"} in repo["schedules"]
        assert {"sync_source_partitions", "kbflow_automation"} <= {s["name"] for s in repo["sensors"]}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
