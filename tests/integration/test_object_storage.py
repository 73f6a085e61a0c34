"""The lake on object storage: every command on an s3:// lake served by a local S3 (moto's server on 127.0.0.1),
a writer killed with SIGKILL in the middle of its commits, and a reader searching while an ingest commits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL

from kbflow.cli import main

moto_server = pytest.importorskip("moto.server")

BUCKET = "kbflow-test"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A local S3 for this module; the standard AWS variables point every client at it (restored after)."""
    import boto3

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {
        "AWS_ENDPOINT": endpoint,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "KBFLOW_DAGSTER_HOME": str(tmp_path_factory.mktemp("dagster-home")),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    try:
        yield endpoint
    finally:
        from kbflow import usage

        usage.flush()  # the query log's last rows, while the server still answers
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


def _cli(lake: str, *args: str):
    result = CliRunner().invoke(main, ["--lake", lake, *args], catch_exceptions=False)
    return result


def _corpus(root: Path, files: int = 3) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        (root / f"page{n}.md").write_text(
            f"# Page {n}\n\nRivers and bridges, part {n}.\n\n## More\n\nSpan {n} of the bridge.\n"
        )
    return root


def test_every_command_works_on_an_s3_lake(s3, tmp_path, docs_dir):
    lake = f"s3://{BUCKET}/every-command"
    assert _cli(lake, "add", str(docs_dir), "--type", "docs", "--id", "docs").exit_code == 0
    out = _cli(lake, "ingest", "--model", FAST_MODEL, "--json")
    assert out.exit_code == 0, out.output
    assert [s["status"] for s in json.loads(out.stdout)["sources"]] == ["new"]
    hits = [
        json.loads(line)
        for line in _cli(lake, "search", "reciprocal rank fusion", "-k", "2", "--json").stdout.splitlines()
    ]
    assert hits and hits[0]["citation"]["source_id"] == "docs"
    assert _cli(lake, "resolve", hits[0]["chunk_id"]).exit_code == 0
    status = json.loads(_cli(lake, "status", "--json").stdout)
    assert status["lake"] == lake and status["sources"][0]["status"] == "indexed"
    assert _cli(lake, "tag", "first").exit_code == 0
    assert "first" in _cli(lake, "versions").output
    assert _cli(lake, "search", "bridges", "--tag", "first", "--json").exit_code == 0
    assert _cli(lake, "gc", "--keep", "1").exit_code == 0
    learned = _cli(lake, "claims", "learn", "Ranks are fused by RRF", "--cite", hits[0]["chunk_id"])
    assert learned.exit_code == 0, learned.output
    assert learned.stdout.strip() in _cli(lake, "claims", "recall", "rank fusion", "--json").stdout
    assert _cli(lake, "keys", "create", "--scope", "global").exit_code == 0
    assert _cli(lake, "remove", "docs").exit_code == 0
    assert json.loads(_cli(lake, "status", "--json").stdout)["sources"] == []
    # evaluation lakes too
    from conftest import SAMPLES

    evaluated = _cli(lake, "eval", str(SAMPLES / "minieval"), "--eval-lake", f"s3://{BUCKET}/eval", "--model",
                     FAST_MODEL, "--mode", "bm25")  # fmt: skip
    assert evaluated.exit_code == 0, evaluated.output
    # the Dagster instance of an s3 lake lives on this machine, where KBFLOW_DAGSTER_HOME says
    assert (Path(os.environ["KBFLOW_DAGSTER_HOME"]) / "dagster.yaml").exists()


def test_a_writer_killed_mid_commit_leaves_a_readable_lake_that_the_next_ingest_completes(s3, tmp_path):
    from kbflow import Retriever
    from kbflow.config import Settings
    from kbflow.lake import Lake
    from kbflow.pipeline import run_ingest

    lake_uri = f"s3://{BUCKET}/killed"
    corpus = _corpus(tmp_path / "corpus", files=40)
    assert _cli(lake_uri, "add", str(corpus), "--type", "docs", "--id", "pages").exit_code == 0
    settings = Settings.coerce(None, lake=lake_uri, model=FAST_MODEL)
    assert run_ingest(settings, runner="dagster").ok
    for n in range(40):  # every page changes: the next ingest rewrites every table
        (corpus / f"page{n}.md").write_text(f"# Page {n}\n\nCanals and locks, part {n}.\n")
    env = dict(os.environ, KBFLOW_LEASE_SECONDS="3")  # the killed writer's lease entry expires 3 s after it dies
    code = (
        "from kbflow.config import Settings; from kbflow.pipeline import run_ingest\n"
        f"run_ingest(Settings.coerce(None, lake={lake_uri!r}, model={FAST_MODEL!r}), runner='local')\n"
    )
    lake = Lake(lake_uri)
    before = lake.versions()
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.monotonic() + 120
    while lake.versions() == before:  # wait for its first commit, then kill it in the middle of the rest
        assert proc.poll() is None and time.monotonic() < deadline, "the writer finished before it could be killed"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # readable: every table at a committed version, searches answer
    Lake(lake_uri).versions()
    Retriever.open(lake_uri, settings=settings).search("bridges", k=3)
    summary = run_ingest(settings, runner="dagster", wait=60)  # and the next ingest (once it expired) converges
    assert summary.ok, summary.to_dict()
    hits = Retriever.open(lake_uri, settings=settings).search("canals and locks", k=3, mode="bm25")
    assert hits and "Canals" in hits[0].text
    from kbflow.pipeline import checks

    assert checks.check_keys_unique(Lake(lake_uri)).passed
    assert checks.check_search_matches_chunks(Lake(lake_uri)).passed


def test_a_reader_searches_while_an_ingest_commits(s3, tmp_path):
    from kbflow import Retriever
    from kbflow.config import Settings
    from kbflow.pipeline import run_ingest

    lake_uri = f"s3://{BUCKET}/reader"
    corpus = _corpus(tmp_path / "corpus", files=10)
    assert _cli(lake_uri, "add", str(corpus), "--type", "docs", "--id", "pages").exit_code == 0
    settings = Settings.coerce(None, lake=lake_uri, model=FAST_MODEL)
    assert run_ingest(settings, runner="local").ok
    stop, errors, answered = threading.Event(), [], []

    def read() -> None:
        while not stop.is_set():
            try:
                hits = Retriever.open(lake_uri, settings=settings).search("bridge span", k=3)
                answered.append(len(hits))
            except Exception as exc:  # any failure fails the test
                errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(10):
            (corpus / f"page{n}.md").write_text(f"# Page {n}\n\nA bridge span of {n * 10} metres.\n")
        assert run_ingest(settings, runner="local").ok
    finally:
        stop.set()
        reader.join(60)
    assert not errors, errors[:3]
    assert answered and all(n == 3 for n in answered)


def test_fetched_pages_are_kept_in_the_bucket(s3):
    from kbflow.lake.raw import RawStore

    store = RawStore(f"s3://{BUCKET}/raw-lake", "web")
    digest = store.put(b"<html><p>kept as fetched</p></html>", {"url": "https://example.com/"})
    assert store.get(digest) == (b"<html><p>kept as fetched</p></html>", {"url": "https://example.com/"})
    store.set_state({"url": "https://example.com/", "hash": digest})
    assert RawStore(f"s3://{BUCKET}/raw-lake", "web").state()["hash"] == digest


#: one writer: takes the lake's exclusive lease, notes when it held it, holds it a while
_WRITER = """
import sys, time
from kbflow.lake.lease import lease
uri, out, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
with lease(uri, "writer " + out, wait=60):
    start = time.time()
    time.sleep(hold)
    end = time.time()
with open(out, "w") as fh:
    fh.write(f"{start} {end}")
"""


def test_two_writers_on_separate_processes_take_the_s3_lease_in_turn(s3, tmp_path):
    uri = f"s3://{BUCKET}/race"
    outs = [tmp_path / f"w{i}" for i in range(3)]
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, uri, str(out), "1.0"]) for out in outs]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    spans = sorted(tuple(map(float, out.read_text().split())) for out in outs)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end, f"two writers held the lease at once: {spans}"


def test_a_second_writer_is_told_who_holds_the_s3_lease_and_a_shared_holder_joins_another(s3):
    from kbflow.errors import LakeBusyError
    from kbflow.lake.object_lease import ObjectLease

    uri = f"s3://{BUCKET}/busy"
    first = ObjectLease(uri, {}, "kbflow ingest", exclusive=True)
    first.acquire(0)
    try:
        second = ObjectLease(uri, {}, "kbflow gc", exclusive=True)
        with pytest.raises(LakeBusyError, match=r"being written by `kbflow ingest` \(pid \d+ on .*exclusive"):
            second.acquire(0)
        with pytest.raises(LakeBusyError):
            ObjectLease(uri, {}, "dagster asset", exclusive=False).acquire(0)
    finally:
        first.release()
    a, b = (ObjectLease(uri, {}, f"asset {n}", exclusive=False) for n in "ab")
    a.acquire(0)
    b.acquire(0)  # shared holders share
    with pytest.raises(LakeBusyError):
        ObjectLease(uri, {}, "kbflow ingest", exclusive=True).acquire(0)
    a.release()
    b.release()
    taken = ObjectLease(uri, {}, "kbflow ingest", exclusive=True)
    taken.acquire(0)  # every holder gone: free again
    taken.release()


def test_a_killed_holders_s3_lease_expires_and_a_stalled_holder_learns_it_lost_it(s3, tmp_path, monkeypatch):
    from kbflow.errors import LakeBusyError
    from kbflow.lake import object_lease
    from kbflow.lake.object_lease import ObjectLease

    uri = f"s3://{BUCKET}/expiry"
    env = dict(os.environ, KBFLOW_LEASE_SECONDS="2")
    holder = subprocess.Popen([sys.executable, "-c", _WRITER, uri, str(tmp_path / "never"), "60"], env=env)
    monkeypatch.setattr(object_lease, "LEASE_SECONDS", 2.0)
    deadline = time.time() + 60
    while time.time() < deadline:  # the holder has it
        try:
            probe = ObjectLease(uri, {}, "probe", exclusive=True)
            probe.acquire(0)
            probe.release()
        except LakeBusyError:
            break
        time.sleep(0.2)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    t = time.time()
    after = ObjectLease(uri, {}, "kbflow ingest", exclusive=True)
    after.acquire(30)  # the dead holder stops renewing: its entry expires within 2 s
    assert time.time() - t < 10
    # a holder stalled past its expiry (its renewal stopped) is taken over, and told so at release
    after._stop.set()
    after._thread.join()
    time.sleep(2.2)
    other = ObjectLease(uri, {}, "kbflow ingest", exclusive=True)
    other.acquire(0)
    after._renew_once()
    with pytest.raises(LakeBusyError, match="expired while it wrote"):
        after.release()
    other.release()


#: one claims writer: learns claims one at a time into the store of an S3 lake
_CLAIMS_WRITER = """
import sys
from kbflow import Claims, Evidence
uri, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = Claims.open(uri, settings={"model": "hash:64"}, actor=("agent", name), wait=120)
for i in range(count):
    store.learn(f"{name} learned fact number {i}", [Evidence.url("https://example.com/" + name)])
"""


def test_two_processes_writing_claims_to_s3_take_the_claims_lease_and_lose_no_event(s3):
    from kbflow import Claims
    from kbflow import schema as S

    uri = f"s3://{BUCKET}/claims-race"
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIMS_WRITER, uri, name, "12"]) for name in ("ann", "bob")]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    store = Claims.open(uri, settings={"model": FAST_MODEL})
    events = store.tables.events()
    numbers = [e[S.EVENT_N] for e in events]
    # every event kept, each with its own number: no writer computed its numbers from a stale log
    assert len(store) == 24 and sorted(numbers) == list(range(1, 25))
    assert {c.actor.id for c in store.list()} == {"ann", "bob"}
    assert len(store.audit()) == 24
