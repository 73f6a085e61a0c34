"""kbflow serve against a key holder who tries to reach past the key's scope, a file swapped for a link after
ingest, paths that are URLs, ids that are paths, other sites' GETs, caps however a body arrives, stops, load and
old log rows: each finding of issue 56 reproduced, over real HTTP on a real uvicorn server."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL, SAMPLES
from support import Server, free_port

from kbflow import Client, usage
from kbflow import schema as S
from kbflow.cli import main
from kbflow.config import Settings
from kbflow.errors import AccessDeniedError, SourceConflictError, SourceError, UnsafeFileError
from kbflow.lake import Lake
from kbflow.pipeline import ingest, register_source, rename_source
from kbflow.records import Source
from kbflow.records.paths import confined_file
from kbflow.records.source_ids import check_source_id, is_source_id
from kbflow.retrieve.resolver import resolve
from kbflow.service.admission import Admission, searches
from kbflow.service.core import Service
from kbflow.usage.keys import create_key

SECRET = "BILLING_DB_PASSWORD=hunter2-billing"
CREDENTIALS = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/CREDENTIALSFILE"
SCOPES = {"billing": "acme/billing", "payments": "acme/payments", "handbook": "global"}


@pytest.fixture(scope="module")
def house(tmp_path_factory):
    """A lake of three scopes (billing holds a secret), a PDF source, keys for each role, served over HTTP."""
    root = tmp_path_factory.mktemp("house")
    texts = {
        "billing": f"# Billing deploy\n\nThe billing database password is {SECRET}.\n",
        "payments": "# Payments deploy\n\nPayments deploys run on Tuesdays.\n",
        "handbook": "# Handbook\n\nEveryone deploys with care.\n",
    }
    lake = Lake(str(root / "lake"))
    for sid, text in texts.items():
        folder = root / "sources" / sid
        folder.mkdir(parents=True)
        (folder / "deploy.md").write_text(text)
        lake.register(Source(sid, "docs", str(folder), scope=SCOPES[sid]))
    (root / "sources" / "pdf").mkdir()
    shutil.copy(SAMPLES / "pdf" / "kbflow-guide.pdf", root / "sources" / "pdf" / "guide.pdf")
    lake.register(Source("guide", "pdf", str(root / "sources" / "pdf"), scope="global"))
    outside = root / "outside"
    outside.mkdir()
    (outside / "credentials").write_text(f"[default]\n{CREDENTIALS}\n")
    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)
    assert ingest(lake, settings).ok
    keys = {
        "payments_editor": create_key(lake, "acme/payments", "editor")[1],
        "payments_reader": create_key(lake, "acme/payments", "reader")[1],
        "billing_editor": create_key(lake, "acme/billing", "editor")[1],
        "acme_editor": create_key(lake, "acme", "editor")[1],
        "empty_reader": create_key(lake, "zeta", "reader")[1],
        "admin": create_key(lake, "global", "editor")[1],
    }
    service = Service(lake, settings, source_roots=[str(root)])
    service.keys.TTL = 0.0
    with Server(service) as server:
        server.lake, server.keys, server.root, server.outside = lake, keys, root, outside
        yield server


def _as(server, key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.keys[key]}"} if key else {}


def _sources(server, key: str) -> dict[str, dict]:
    listed = httpx.get(server.url + "/v1/sources", headers=_as(server, key)).json()["sources"]
    return {s["source_id"]: s for s in listed}


def _search_text(server, key: str, q: str) -> str:
    return httpx.get(server.url + "/v1/search", params={"q": q, "k": 10}, headers=_as(server, key)).text


# --- 1. a scope is owned ----------------------------------------------------------------------------------
def test_an_editor_cannot_take_over_another_scopes_source(house):
    billing = _sources(house, "admin")["billing"]
    takeover = {"uri": billing["uri"], "type": "docs", "id": "billing", "scope": "acme/payments"}
    answer = httpx.post(house.url + "/v1/sources", json=takeover, headers=_as(house, "payments_editor"))
    assert answer.status_code in (403, 409), answer.text
    assert "acme/billing" not in answer.text and billing["uri"] not in answer.text  # names nothing it cannot see
    assert SECRET not in _search_text(house, "payments_reader", "billing database password")
    assert "billing" in _sources(house, "billing_editor")  # the billing editor still sees its own source
    assert _sources(house, "admin")["billing"]["scope"] == "acme/billing"


def test_a_global_source_cannot_be_hidden_by_a_scoped_editor(house):
    handbook = _sources(house, "admin")["handbook"]
    move = {"uri": handbook["uri"], "type": "docs", "id": "handbook", "scope": "acme/payments"}
    answer = httpx.post(house.url + "/v1/sources", json=move, headers=_as(house, "payments_editor"))
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden"
    assert _sources(house, "admin")["handbook"]["scope"] == "global"


def test_a_path_held_in_an_unseen_scope_is_refused_without_its_id(house):
    billing = _sources(house, "admin")["billing"]
    second = {"uri": billing["uri"], "type": "docs", "id": "mine", "scope": "acme/payments"}
    answer = httpx.post(house.url + "/v1/sources", json=second, headers=_as(house, "payments_editor"))
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "conflict"
    assert "'billing'" not in answer.text and "outside your key's reach" in answer.text
    # an editor who can see the holder is told its id
    seen = httpx.post(house.url + "/v1/sources", json=second, headers=_as(house, "acme_editor"))
    assert seen.status_code == 409 and "'billing'" in seen.text


def test_moving_a_source_needs_both_scopes(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n")
    lake.register(Source("d", "docs", str(tmp_path / "d"), scope="acme/billing"))
    billing = create_key(lake, "acme/billing", "editor")[0]
    acme = create_key(lake, "acme", "editor")[0]
    with pytest.raises(AccessDeniedError, match="acme/payments"):
        register_source(lake, str(tmp_path / "d"), "docs", source_id="d", scope="acme/payments", editor=billing)
    register_source(lake, str(tmp_path / "d"), "docs", source_id="d", editor=billing)  # no scope: keeps its own
    assert lake.get_source("d").scope == "acme/billing"
    register_source(lake, str(tmp_path / "d"), "docs", source_id="d", scope="acme/payments", editor=acme)
    assert lake.get_source("d").scope == "acme/payments"


def test_errors_name_no_scope_or_source_beyond_the_key(house):
    empty = httpx.get(house.url + "/v1/search", params={"q": "deploy"}, headers=_as(house, "empty_reader"))
    assert empty.status_code == 200  # its own scope holds nothing: it searches what it sees (global)
    assert {h["citation"]["source_id"] for h in empty.json()["hits"]} <= {"handbook", "guide"}
    unknown = httpx.get(
        house.url + "/v1/search", params={"q": "x", "source": "nope"}, headers=_as(house, "empty_reader")
    )
    assert unknown.status_code == 400
    assert "billing" not in unknown.text and "payments" not in unknown.text and "acme" not in unknown.text
    for key in ("payments_reader", "billing_editor"):
        assert httpx.get(house.url + "/versions", headers=_as(house, key)).status_code == 403
    assert httpx.get(house.url + "/versions", headers=_as(house, "admin")).status_code == 200


def test_claims_keep_to_their_scope(house):
    client = Client(house.url, api_key=house.keys["payments_editor"])
    with pytest.raises(AccessDeniedError):
        client.learn("Billing uses hunter2.", [{"kind": "url", "ref": "https://x.example"}], scope="acme/billing")


# --- 2. a file is read where it was indexed ----------------------------------------------------------------
def _chunk_of(server, source_id: str) -> str:
    hits = httpx.get(
        server.url + "/v1/search", params={"q": "deploy page guide", "k": 20, "source": source_id},
        headers=_as(server, "admin"),
    ).json()["hits"]  # fmt: skip
    return hits[0]["chunk_id"]


def test_a_file_swapped_for_a_symlink_is_refused_on_every_route(house):
    page_chunk, pdf_chunk = _chunk_of(house, "handbook"), _chunk_of(house, "guide")
    deploy = house.root / "sources" / "handbook" / "deploy.md"
    pdf = house.root / "sources" / "pdf" / "guide.pdf"
    saved_md, saved_pdf = deploy.read_bytes(), pdf.read_bytes()
    (house.outside / "other.pdf").write_bytes(saved_pdf)
    deploy.unlink()
    deploy.symlink_to(house.outside / "credentials")
    pdf.unlink()
    pdf.symlink_to(house.outside / "other.pdf")
    try:
        auth = _as(house, "admin")
        for path in (f"/chunks/{page_chunk}/file", f"/v1/resolve/{page_chunk}", f"/chunks/{pdf_chunk}/page.png",
                     f"/chunks/{pdf_chunk}/file", f"/v1/resolve/{pdf_chunk}"):  # fmt: skip
            answer = httpx.get(house.url + path, headers=auth)
            assert answer.status_code == 409, (path, answer.status_code, answer.text[:200])
            assert CREDENTIALS not in answer.text and "refused" in answer.text
        assert httpx.get(house.url + f"/v1/resolve/{page_chunk}", headers=auth).json()["error"]["code"] == "unsafe_file"
        out = CliRunner().invoke(main, ["--lake", house.lake.uri, "resolve", page_chunk])
        assert out.exit_code != 0 and CREDENTIALS not in out.output and "refused" in out.output
        deploy.unlink()
        deploy.mkdir()  # no longer a regular file at all
        answer = httpx.get(house.url + f"/chunks/{page_chunk}/file", headers=auth)
        assert answer.status_code == 409 and "regular file" in answer.text
    finally:
        if deploy.is_dir() and not deploy.is_symlink():
            deploy.rmdir()
        else:
            deploy.unlink()
        deploy.write_bytes(saved_md)
        pdf.unlink()
        pdf.write_bytes(saved_pdf)
    assert httpx.get(house.url + f"/chunks/{page_chunk}/file", headers=_as(house, "admin")).status_code == 200


def test_claims_checks_refuse_a_swapped_file(house):
    chunk = _chunk_of(house, "payments")
    client = Client(house.url, api_key=house.keys["admin"])
    client.learn("Payments deploy on Tuesdays.", [{"kind": "citation", "ref": chunk}], scope="acme/payments")
    deploy = house.root / "sources" / "payments" / "deploy.md"
    saved = deploy.read_bytes()
    deploy.unlink()
    deploy.symlink_to(house.outside / "credentials")
    try:
        report = httpx.post(house.url + "/v1/claims/check", headers=_as(house, "admin")).json()
        assert CREDENTIALS not in str(report) and "refused" in str(report)
    finally:
        deploy.unlink()
        deploy.write_bytes(saved)


def test_confined_file_follows_links_only_inside_the_root(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "a.md").write_text("a")
    (outside / "b.md").write_text("b")
    (root / "inner.md").symlink_to(root / "sub" / "a.md")  # a link that stays inside is fine
    assert confined_file("inner.md", str(root)) == str(root / "sub" / "a.md")
    (root / "escape.md").symlink_to(outside / "b.md")
    with pytest.raises(UnsafeFileError, match="outside its source"):
        confined_file("escape.md", str(root))
    with pytest.raises(UnsafeFileError, match="outside"):
        confined_file("../outside/b.md", str(root))
    with pytest.raises(UnsafeFileError, match="regular file"):
        confined_file("sub", str(root))
    assert confined_file("gone.md", str(root)) == str(root / "gone.md")  # a missing file is its reader's to report
    moved = tmp_path / "moved"
    root.rename(moved)
    root.symlink_to(outside)  # the source's own folder swapped for a link
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        confined_file("b.md", str(root))


def test_a_one_file_source_swapped_for_a_link_does_not_resolve(tmp_path):
    records = tmp_path / "records.jsonl"
    records.write_text('{"_id": "1", "text": "A record about lighthouses."}\n')
    lake = Lake(str(tmp_path / "lake"))
    lake.register(Source("recs", "jsonl", str(records)))
    assert ingest(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)).ok
    from kbflow import Retriever

    hit = Retriever.open(lake, settings=Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)).search("lighthouses")[0]
    (tmp_path / "elsewhere.jsonl").write_text(records.read_text())
    records.unlink()
    records.symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(UnsafeFileError):
        resolve(hit, lake=lake)


# --- 3. a path is a path, an id is a name ---------------------------------------------------------------
@pytest.mark.parametrize("uri", ["http://../../secret", "file:///etc/passwd", "s3://bucket/x", "ftp://host/x"])
def test_local_source_types_refuse_uris_with_a_scheme(house, uri):
    answer = httpx.post(house.url + "/v1/sources", json={"uri": uri, "type": "docs"}, headers=_as(house, "admin"))
    assert answer.status_code == 400 and "local path" in answer.json()["error"]["message"], answer.text


def test_the_source_root_check_runs_on_the_resolved_path(house, tmp_path):
    link = house.root / "sources" / "link-out"
    link.symlink_to(tmp_path)
    try:
        answer = httpx.post(
            house.url + "/v1/sources", json={"uri": str(link), "type": "docs"}, headers=_as(house, "admin")
        )
        assert answer.status_code == 403 and "--source-root" in answer.text
    finally:
        link.unlink()


@pytest.mark.parametrize("bad", ["x/../v", "../v", "a b", "-lead", ".hidden", "x" * 65, "é", "a\\b", ""])
def test_source_ids_follow_one_pattern_on_every_surface(house, bad):
    assert not is_source_id(bad)
    with pytest.raises(SourceError):
        check_source_id(bad)
    fresh = house.root / "sources" / "fresh"
    fresh.mkdir(exist_ok=True)
    (fresh / "a.md").write_text("# Fresh\n")
    folder = str(fresh)
    answer = httpx.post(house.url + "/v1/sources", json={"uri": folder, "type": "docs", "id": bad},
                        headers=_as(house, "admin"))  # fmt: skip
    if bad:  # an empty id is the default id
        assert answer.status_code == 400, answer.text
    out = CliRunner().invoke(main, ["--lake", house.lake.uri, "add", folder, "--type", "docs", "--id", bad])
    if bad:
        assert out.exit_code != 0 and "source id" in out.output
    assert "x/../v" not in _sources(house, "admin")


def test_a_lake_with_an_older_id_opens_and_renames_it(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAbout harbours.\n")
    lake = Lake(str(tmp_path / "lake"))
    lake.update_sources([Source("old id/x", "docs", str(folder)).to_row()])  # an older rule let this in
    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)
    assert ingest(lake, settings).ok
    from kbflow import Retriever

    assert Retriever.open(lake, settings=settings).search("harbours")[0].citation.source_id == "old id/x"
    with pytest.raises(SourceError):
        rename_source(lake, "old id/x", "still bad/")
    rename_source(lake, "old id/x", "harbours")
    assert [s.source_id for s in lake.sources()] == ["harbours"]
    assert ingest(lake, settings).ok
    assert Retriever.open(lake, settings=settings).search("harbours")[0].citation.source_id == "harbours"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "b.md").write_text("# B\n")
    lake.register(Source("other", "docs", str(tmp_path / "other")))
    with pytest.raises(SourceConflictError, match="taken"):
        rename_source(lake, "harbours", "other")


def test_the_sources_page_links_every_id_to_its_own_routes(house):
    page = httpx.get(house.url + "/sources", headers=_as(house, "admin")).text
    for sid in ("billing", "payments", "handbook"):
        assert f"action='/sources/{sid}/remove'" in page


# --- 4. other sites get nothing ------------------------------------------------------------------------------
def _logged(lake: Lake, text: str) -> bool:
    usage.flush(lake)
    return text in usage.read_log(lake, S.QUERY_LOG)[S.QUERY].to_list()


@pytest.mark.parametrize(
    "fetch",
    [
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"},
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},
        {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"},
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"},
    ],
)
def test_another_sites_get_is_refused_before_any_work(tmp_path, fetch):
    lake = Lake(str(tmp_path / "lake"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nAbout canaries.\n")
    lake.register(Source("d", "docs", str(tmp_path / "d")))
    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)
    assert ingest(lake, settings).ok
    with Server(Service(lake, settings)) as server:  # keyless
        canary = f"canary-{fetch['Sec-Fetch-Dest']}-{fetch['Sec-Fetch-Site']}"
        for path in (f"/v1/search?q={canary}", f"/?q={canary}", "/v1/sources", "/v1/health", "/sources"):
            answer = httpx.get(server.url + path, headers=fetch)
            assert answer.status_code == 403 and "Sec-Fetch-Site" in answer.text, (path, answer.text)
        assert not _logged(lake, canary)
        # the user's own navigation, a link followed, a URL typed, curl: all answered
        for headers in (
            {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},
            {"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},
            {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},
            {},
        ):
            assert httpx.get(server.url + "/v1/sources", headers=headers).status_code == 200, headers


# --- 5. no 500 for a caller's mistake ----------------------------------------------------------------
def test_missing_versions_and_tags_are_404(house):
    auth = _as(house, "admin")
    for params in ({"q": "deploy", "version": 999999}, {"q": "deploy", "tag": "no-such-tag"}):
        answer = httpx.get(house.url + "/v1/search", params=params, headers=auth)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "version_not_found", answer.text


def test_caps_answer_413_and_414_however_the_body_arrives(house):
    auth = {**_as(house, "admin"), "Content-Type": "application/json"}
    big = b'{"chunk_ids": ["' + b"x" * (300 * 1024) + b'"]}'

    def chunked():
        for i in range(0, len(big), 8192):
            yield big[i : i + 8192]

    answer = httpx.post(house.url + "/v1/citations", content=chunked(), headers=auth)
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "too_large"
    deep = b'{"chunk_ids": ["a"], "query_id": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    answer = httpx.post(house.url + "/v1/citations", content=deep, headers=auth)
    assert answer.status_code == 413 and "nested" in answer.json()["error"]["message"]
    answer = httpx.get(house.url + "/v1/search", params={"q": "x" * 9000}, headers=auth)
    assert answer.status_code == 414 and answer.json()["error"]["code"] == "too_large"


# --- 6. nothing lost at a stop ---------------------------------------------------------------------------------
def _serve(lake: Lake, port: int) -> subprocess.Popen:
    env = {**os.environ, "KBFLOW_MODEL": FAST_MODEL}
    process = subprocess.Popen(
        [sys.executable, "-m", "kbflow.cli", "--lake", lake.uri, "serve", "--port", str(port), "--no-mcp"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError(process.stderr.read().decode())


@pytest.fixture
def small_lake(tmp_path) -> Lake:
    lake = Lake(str(tmp_path / "lake"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nAbout lighthouses and harbours.\n")
    lake.register(Source("d", "docs", str(tmp_path / "d")))
    assert ingest(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)).ok
    return lake


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_the_query_log_is_written_at_a_graceful_stop(small_lake, stop):
    port = free_port()
    process = _serve(small_lake, port)
    asked = f"asked just before the stop {stop.name}"
    assert httpx.get(f"http://127.0.0.1:{port}/v1/search", params={"q": asked}).status_code == 200
    process.send_signal(stop)
    assert process.wait(timeout=60) in (0, -stop)  # uvicorn stops gracefully, then dies of the signal it caught
    assert asked in usage.read_log(small_lake, S.QUERY_LOG)[S.QUERY].to_list()


def test_a_kill_loses_at_most_the_flush_interval(small_lake):
    port = free_port()
    process = _serve(small_lake, port)
    asked = "asked well before a kill -9"
    assert httpx.get(f"http://127.0.0.1:{port}/v1/search", params={"q": asked}).status_code == 200
    # the server's own timer writes the row: wait for it (a loaded machine's write can outlast the interval),
    # never for a shutdown, then kill
    deadline = time.monotonic() + usage.FLUSH_SECONDS * 2 + 30
    time.sleep(usage.FLUSH_SECONDS * 2 + 1)
    while asked not in usage.read_log(small_lake, S.QUERY_LOG)[S.QUERY].to_list() and time.monotonic() < deadline:
        time.sleep(0.5)
    process.kill()
    process.wait(timeout=30)
    assert asked in usage.read_log(small_lake, S.QUERY_LOG)[S.QUERY].to_list()


def test_the_mcp_process_writes_its_log_when_the_agent_closes_it(small_lake):
    from mcp import Client as McpClient
    from mcp.client.stdio import StdioServerParameters

    args = ["-m", "kbflow.cli", "--lake", small_lake.uri, "mcp"]
    params = StdioServerParameters(command=sys.executable, args=args, env={**os.environ, "HF_HUB_OFFLINE": "1"})

    async def ask():
        async with McpClient(params) as client:
            await client.call_tool("knowledge_search", {"query": "asked over stdio before the pipe closed"})

    asyncio.run(ask())
    assert "asked over stdio before the pipe closed" in usage.read_log(small_lake, S.QUERY_LOG)[S.QUERY].to_list()


# --- 7. held past saturation -----------------------------------------------------------------------------------
def test_admission_runs_a_bounded_number_queues_a_few_and_refuses_the_rest():
    async def scenario():
        gate = Admission(limit=2, queue=1)
        assert await gate.enter() and await gate.enter()  # two run
        waiter = asyncio.ensure_future(gate.enter())  # one waits
        await asyncio.sleep(0)
        assert not waiter.done() and gate.waiting == 1
        assert not await gate.enter()  # the queue is full: refused at once
        await gate.leave()
        assert await waiter  # the waiting one takes the freed slot
        assert gate.running == 2 and gate.refused == 1
        unbounded = Admission(limit=0)
        assert all([await unbounded.enter() for _ in range(100)])

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "method, path, query, metered",
    [
        ("GET", "/v1/search", b"q=x", True),
        ("POST", "/mcp", b"", True),
        ("GET", "/", b"q=x", True),
        ("GET", "/", b"", False),
        ("GET", "/v1/claims", b"q=x", True),
        ("GET", "/v1/claims", b"", False),
        ("GET", "/v1/health", b"", False),
        ("GET", "/v1/sources", b"", False),
    ],
)
def test_only_searches_are_metered(method, path, query, metered):
    assert searches(method, path, query) is metered


class _Slow(Service):
    """A service whose searches take half a second: the server saturates with a few callers."""

    def search(self, *args, **kwargs):
        time.sleep(0.5)
        return super().search(*args, **kwargs)


def test_past_saturation_the_server_answers_503_with_retry_after(small_lake):
    import concurrent.futures

    settings = Settings.coerce(None, lake=small_lake.uri, model=FAST_MODEL)
    with Server(_Slow(small_lake, settings), admission=Admission(limit=1, queue=1)) as server:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda i: httpx.get(server.url + "/v1/search", params={"q": f"q{i}"}), range(6)))
        codes = sorted(a.status_code for a in answers)
        assert codes.count(200) >= 2 and codes.count(503) >= 1, codes
        refused = next(a for a in answers if a.status_code == 503)
        assert refused.headers["retry-after"] == "1" and refused.json()["error"]["code"] == "overloaded"
        assert httpx.get(server.url + "/v1/health").status_code == 200  # health is never metered
        # the client waits as told and asks again
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            hits = list(pool.map(lambda i: Client(server.url).search(f"c{i}"), range(4)))
        assert len(hits) == 4


# --- 8. logs that do not grow forever ---------------------------------------------------------------------
def _old_rows(lake: Lake, days: int) -> None:
    import pyarrow as pa

    when = datetime.now(UTC) - timedelta(days=days)
    row = {f.name: None for f in S.QUERY_LOG_SCHEMA}
    row.update({S.QUERY_ID: f"old-{days}", S.LOGGED_AT: when, S.QUERY: f"asked {days} days ago", S.ORIGIN: "python",
                S.MODE: "hybrid", "k": 10, S.RESULTS: 0, S.LATENCY_MS: 1.0, S.SEARCH_VERSION: 1})  # fmt: skip
    lake.append(S.QUERY_LOG, pa.Table.from_pylist([row], schema=S.QUERY_LOG_SCHEMA).to_reader())


def test_logs_keep_90_days_by_default_and_gc_drops_older_rows(small_lake):
    _old_rows(small_lake, 200)
    _old_rows(small_lake, 30)
    out = CliRunner().invoke(main, ["--lake", small_lake.uri, "gc", "--json"])
    assert out.exit_code == 0, out.output
    import json

    assert json.loads(out.stdout)["log_rows_removed"][S.QUERY_LOG] == 1
    kept = usage.read_log(small_lake, S.QUERY_LOG)[S.QUERY].to_list()
    assert "asked 30 days ago" in kept and "asked 200 days ago" not in kept
    assert usage.prune(small_lake, 0) == {}  # 0 keeps every row
    report = CliRunner().invoke(main, ["--lake", small_lake.uri, "insights", "--since", "all"])
    assert "the logs keep 90 days" in report.output and "oldest row from" in report.output


def test_a_running_server_drops_old_rows(small_lake):
    _old_rows(small_lake, 10)
    settings = Settings.coerce(None, lake=small_lake.uri, model=FAST_MODEL, log_days=7)
    with Server(Service(small_lake, settings)):
        deadline = time.monotonic() + 20
        while "asked 10 days ago" in usage.read_log(small_lake, S.QUERY_LOG)[S.QUERY].to_list():
            assert time.monotonic() < deadline, "the server kept a row past its retention"
            time.sleep(0.2)


def test_insights_say_what_window_they_cover(house):
    report = httpx.get(house.url + "/v1/insights", params={"since": ""}, headers=_as(house, "admin")).json()
    assert report["log_days"] == 90 and "oldest" in report
    page = httpx.get(house.url + "/insights", headers=_as(house, "admin")).text
    assert "The logs keep 90 days" in page
