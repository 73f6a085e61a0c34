"""kbflow serve: a real uvicorn server on a free port, real HTTP (httpx), the MCP SDK's own client over
streamable HTTP and stdio; parity of every surface, scope isolation, keys, logs, limits."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time

import httpx
import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL
from support import QUERY, TEAMS, Server, team_lake

from kbflow import Client, Retriever, usage
from kbflow import schema as S
from kbflow.cli import main
from kbflow.config import Settings
from kbflow.errors import AccessDeniedError, AuthError, QueryError
from kbflow.lake import Lake
from kbflow.records.prompt import parse_blocks
from kbflow.service.app import MAX_BODY
from kbflow.service.core import Service
from kbflow.usage.keys import create_key, revoke_key


@pytest.fixture(scope="module")
def open_lake(tmp_path_factory) -> Lake:
    return team_lake(tmp_path_factory.mktemp("open"))


@pytest.fixture(scope="module")
def open_server(open_lake):
    service = Service(open_lake)
    with Server(service) as server:
        server.service = service
        yield server


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    root = tmp_path_factory.mktemp("keyed")
    lake = team_lake(root)
    keys = {
        "payments_reader": create_key(lake, "acme/payments", "reader")[1],
        "acme_editor": create_key(lake, "acme", "editor")[1],
        "billing_editor": create_key(lake, "acme/billing", "editor")[1],
        "admin": create_key(lake, "global", "editor")[1],
    }
    service = Service(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL), source_roots=[str(root)])
    service.keys.TTL = 0.0  # see revocations at once
    with Server(service) as server:
        server.service, server.keys, server.root, server.lake = service, keys, root, lake
        yield server


def log_rows(lake: Lake, table: str):
    usage.flush()
    return usage.read_log(lake, table)


# --- REST ---------------------------------------------------------------------------------
def test_rest_search_chunk_resolve_sources_health(open_server, open_lake):
    http = httpx.Client(base_url=open_server.url)
    health = http.get("/v1/health").json()
    assert health["status"] == "ok" and health["auth"] is False and health["chunks"] == 4
    data = http.get("/v1/search", params={"q": QUERY, "k": 3, "scope": "acme/payments"}).json()
    assert [h["citation"]["source_id"] for h in data["hits"]][0] == "payments"
    assert {h["scope"] for h in data["hits"]} <= {"acme/payments", "acme", "global"}
    assert data["query_id"] and data["version"] == health["version"]
    first = data["hits"][0]["chunk_id"]
    chunk = http.get(f"/v1/chunks/{first}").json()
    assert chunk["text"].startswith("# Payments runbook") and chunk["neighbours"] == {"previous": None, "next": None}
    assert http.get(f"/v1/resolve/{first}").json()["text"] == chunk["text"]
    sources = http.get("/v1/sources").json()["sources"]
    assert {s["source_id"] for s in sources} == set(TEAMS)
    one = http.get("/v1/sources/payments").json()
    assert one["status"] == "indexed" and one["chunk_count"] == 1 and one["skipped"] == []
    assert "/v1/search" in http.get("/openapi.json").json()["paths"]


@pytest.mark.parametrize(
    ("request_args", "status", "code", "message"),
    [
        (("GET", "/v1/search", {"params": {"q": ""}}), 400, "invalid_request", "query is empty"),
        (("GET", "/v1/search", {"params": {"q": "x" * 1001}}), 400, "invalid_request", "limit is 1000"),
        (("GET", "/v1/search", {"params": {"q": "x", "k": 101}}), 400, "invalid_request", "k must be"),
        (("GET", "/v1/search", {"params": {"q": "x", "k": "many"}}), 400, "invalid_request", "k:"),
        (("GET", "/v1/search", {"params": {"q": "x", "mode": "magic"}}), 400, "invalid_request", "unknown mode"),
        (("GET", "/v1/search", {"params": {"q": "x", "scope": "acme//x"}}), 400, "invalid_request", "empty part"),
        (("GET", "/v1/search", {"params": {"q": "x", "scope": "nowhere"}}), 400, "invalid_request", "unknown scope"),
        (("GET", "/v1/search", {"params": {"q": "x", "kind": "nope"}}), 400, "invalid_request", "content kind"),
        (("GET", "/v1/search", {"params": {"q": "x" * 9000}}), 414, "too_large", "query string"),
        (("GET", "/v1/chunks/nope", {}), 404, "not_found", "no chunk"),
        (("GET", "/v1/sources/nope", {}), 404, "source_not_found", "no source"),
        (("POST", "/v1/citations", {"json": {"chunk_ids": []}}), 400, "invalid_request", "chunk_ids"),
        (("POST", "/v1/citations", {"content": b"{not json", "headers": {"content-type": "application/json"}}),
         400, "invalid_request", "JSON"),
        (("POST", "/v1/citations", {"content": b"x" * (MAX_BODY + 1), "headers": {"content-type": "application/json"}}),
         413, "too_large", "body"),
        (("POST", "/v1/sources", {"json": {"uri": "nonexistent-folder", "type": "docs"}}), 400, "invalid_source", ""),
        (("POST", "/v1/sources", {"json": {"uri": "/nonexistent", "type": "docs"}}), 403, "forbidden", "source-root"),
        (("POST", "/v1/citations", {"content": b'{"chunk_ids": ["x"]}', "headers": {"content-type": "text/plain"}}),
         415, "unsupported_media_type", "application/json"),
        (("GET", "/v1/nothing", {}), 404, "not_found", ""),
    ],
)  # fmt: skip
def test_bad_requests_get_the_documented_error(open_server, request_args, status, code, message):
    method, path, kwargs = request_args
    response = httpx.request(method, open_server.url + path, **kwargs)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and message in error["message"]


# --- parity -------------------------------------------------------------------------------
def _mcp_http(url: str, tool: str, args: dict, token: str | None = None):
    from mcp import Client as McpClient
    from mcp.client.streamable_http import streamable_http_client

    async def go():
        import httpx2

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with McpClient(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                return await client.call_tool(tool, args)

    return asyncio.run(go())


def test_five_surfaces_return_the_same_hits(open_server, open_lake):
    args = {"k": 4, "scope": "acme/billing"}
    want = [(h.chunk_id, h.score) for h in Retriever.open(open_lake).search(QUERY, **args)]
    assert len(want) == 3
    client = [(h.chunk_id, h.score) for h in Client(open_server.url).search(QUERY, **args)]
    rest = httpx.get(f"{open_server.url}/v1/search", params={"q": QUERY, **args}).json()["hits"]
    out = CliRunner().invoke(
        main, ["--lake", open_lake.uri, "search", QUERY, "-k", "4", "--scope", "acme/billing", "--json"]
    )
    assert out.exit_code == 0, out.output
    cli = [json.loads(line) for line in out.stdout.splitlines()]
    mcp = _mcp_http(open_server.url, "knowledge_search", {"query": QUERY, **args}).structured_content["hits"]
    for other in (client, [(h["chunk_id"], h["score"]) for h in rest], [(h["chunk_id"], h["score"]) for h in cli]):
        assert other == want
    assert [(h["chunk_id"], h["score"]) for h in mcp] == want


def test_mcp_search_blocks_are_untrusted_and_parseable(open_server):
    result = _mcp_http(open_server.url, "knowledge_search", {"query": QUERY, "k": 2, "scope": "acme/payments"})
    text = "\n\n".join(c.text for c in result.content)
    blocks = parse_blocks(text)
    hits = result.structured_content["hits"]
    assert [b["chunk_id"] for b in blocks] == [h["chunk_id"] for h in hits]
    assert blocks[0]["text"] == hits[0]["text"] and blocks[0]["citation"].startswith("payments.md")
    sources = _mcp_http(open_server.url, "list_sources", {}).structured_content["sources"]
    assert {s["source_id"] for s in sources} == set(TEAMS)
    resolved = _mcp_http(open_server.url, "resolve_citation", {"chunk_id": hits[0]["chunk_id"]})
    assert resolved.content[0].text == hits[0]["text"]
    bad = _mcp_http(open_server.url, "knowledge_search", {"query": ""})
    assert bad.is_error and "query is empty" in bad.content[0].text


def test_mcp_over_stdio_with_the_sdk_client(open_lake):
    from mcp import Client as McpClient
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbflow.cli", "--lake", open_lake.uri, "mcp"],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )

    async def go():
        async with McpClient(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            found = await client.call_tool("knowledge_search", {"query": QUERY, "k": 2, "scope": "acme/payments"})
            chunk_id = found.structured_content["hits"][0]["chunk_id"]
            resource = await client.read_resource(f"kbflow://chunk/{chunk_id}")
            return tools, found, json.loads(resource.contents[0].text)

    tools, found, chunk = asyncio.run(go())
    assert {"knowledge_search", "resolve_citation", "list_sources"} <= tools
    assert found.structured_content["hits"][0]["citation"]["source_id"] == "payments"
    assert chunk["text"].startswith("# Payments runbook")
    queries = log_rows(open_lake, S.QUERY_LOG)
    assert "mcp" in queries[S.ORIGIN].to_list()


# --- logs -----------------------------------------------------------------------------------
def test_every_surface_logs_and_citations_keep_their_text(open_server, open_lake):
    client = Client(open_server.url)
    hits = client.search("vacation policy days", k=2)
    assert client.cite(hits[:1], turn_id="conv-17#4") == 1
    queries = log_rows(open_lake, S.QUERY_LOG)
    row = queries.filter(queries[S.QUERY_ID] == hits.query_id).row(0, named=True)
    assert row[S.ORIGIN] == "rest" and row["k"] == 2 and row[S.RESULTS] == 2
    assert row[S.TOP_SCORE] == hits[0].score and row[S.SEARCH_VERSION] > 0
    cites = log_rows(open_lake, S.CITATION_LOG)
    cited = cites.filter(cites[S.TURN_ID] == "conv-17#4").row(0, named=True)
    assert cited[S.CHUNK_ID] == hits[0].chunk_id and cited[S.QUERY_ID] == hits.query_id
    assert cited[S.TEXT] == hits[0].text and cited[S.CHUNK_HASH] == hits[0].citation.chunk_hash
    origins = set(queries[S.ORIGIN].to_list())
    assert {"rest", "cli", "python"} <= origins  # the parity test searched from each
    report = client.insights(since="1h")
    assert report["queries"] == queries.height and report["citations"] >= 1
    assert {r["origin"] for r in report["by_origin"]} >= {"rest", "cli"}


# --- scopes and keys ------------------------------------------------------------------------
def _get(server, path, token, **params):
    return httpx.get(server.url + path, params=params, headers={"Authorization": f"Bearer {token}"} if token else {})


def test_scope_isolation_on_every_surface(keyed):
    reader = keyed.keys["payments_reader"]
    # REST: the reader's searches stay in its scope, its ancestors and global
    data = _get(keyed, "/v1/search", reader, q=QUERY, k=10).json()
    assert {h["citation"]["source_id"] for h in data["hits"]} == {"payments", "acme", "handbook"}
    assert _get(keyed, "/v1/search", reader, q=QUERY, scope="acme/billing").json()["error"]["code"] == "forbidden"
    assert _get(keyed, "/v1/search", reader, q=QUERY, scope="acme").status_code == 403  # above its scope
    billing = Client(keyed.url, api_key=keyed.keys["billing_editor"]).search(QUERY, k=10)
    billing_chunk = next(h.chunk_id for h in billing if h.citation.source_id == "billing")
    assert _get(keyed, f"/v1/chunks/{billing_chunk}", reader).status_code == 404  # not even its existence
    assert _get(keyed, f"/v1/resolve/{billing_chunk}", reader).status_code == 404
    assert {s["source_id"] for s in _get(keyed, "/v1/sources", reader).json()["sources"]} == {
        "payments", "acme", "handbook"
    }  # fmt: skip
    # Client
    with pytest.raises(AccessDeniedError, match="cannot reach scope"):
        Client(keyed.url, api_key=reader).search(QUERY, scope="acme/billing")
    # MCP over HTTP with the same key
    found = _mcp_http(keyed.url, "knowledge_search", {"query": QUERY, "k": 10}, token=reader)
    assert {h["citation"]["source_id"] for h in found.structured_content["hits"]} == {"payments", "acme", "handbook"}
    denied = _mcp_http(keyed.url, "knowledge_search", {"query": QUERY, "scope": "acme/billing"}, token=reader)
    assert denied.is_error and "cannot reach scope" in denied.content[0].text
    # the library and CLI take the scope as asked
    lib = Retriever.open(keyed.lake).search(QUERY, k=10, scope="acme/payments")
    assert {h.citation.source_id for h in lib} == {"payments", "acme", "handbook"}


def test_keys_required_and_roles_enforced(keyed):
    assert _get(keyed, "/v1/search", None, q=QUERY).status_code == 401
    assert _get(keyed, "/v1/search", "kbf_nope_nope", q=QUERY).json()["error"]["code"] == "unauthorized"
    alive = _get(keyed, "/v1/health", None)  # liveness stays open, and names nothing of the lake to a stranger
    assert alive.status_code == 200 and alive.json() == {"status": "ok"}
    assert str(keyed.lake.uri) in _get(keyed, "/v1/health", keyed.keys["payments_reader"]).text
    # the MCP endpoint needs a key too: the SDK client fails, and the raw answer is the API's 401
    with pytest.raises(BaseException, match="error"):
        _mcp_http(keyed.url, "list_sources", {})
    raw = httpx.post(f"{keyed.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert raw.status_code == 401 and raw.json()["error"]["code"] == "unauthorized"
    reader = Client(keyed.url, api_key=keyed.keys["payments_reader"])
    folder = keyed.root / "new-payments"
    folder.mkdir()
    (folder / "new.md").write_text("# New\n\nA new payments page about refunds.\n")
    with pytest.raises(AccessDeniedError, match="reader"):
        reader.add_source(str(folder), "docs", id="newpay", scope="acme/payments")
    with pytest.raises(AccessDeniedError):
        reader.remove_source("payments")
    with pytest.raises(AccessDeniedError):
        reader.refresh_source("payments")
    with pytest.raises(AccessDeniedError, match="global key"):
        reader.insights()
    billing = Client(keyed.url, api_key=keyed.keys["billing_editor"])
    with pytest.raises(AccessDeniedError, match="cannot reach"):
        billing.add_source(str(folder), "docs", id="newpay", scope="acme/payments")
    with pytest.raises(AccessDeniedError, match="source-root"):
        billing.add_source("/etc", "docs", id="etc", scope="acme/billing")
    editor = Client(keyed.url, api_key=keyed.keys["acme_editor"])
    added = editor.add_source(str(folder), "docs", id="newpay", scope="acme/payments")
    assert added["scope"] == "acme/payments" and added["status"] == "pending"
    summary = editor.refresh_source("newpay")
    assert [s["status"] for s in summary["sources"]] == ["new"]
    assert any(h.citation.source_id == "newpay" for h in reader.search("refunds", k=3))
    assert editor.remove_source("newpay")["source_id"] == "newpay"
    # a revoked key stops working at once (the ring is re-read)
    key_id = keyed.keys["billing_editor"].split("_")[1]
    revoke_key(keyed.lake, key_id)
    with pytest.raises(AuthError, match="unknown or revoked"):
        billing.search(QUERY)


def test_concurrent_searches_while_an_ingest_commits(keyed):
    admin = keyed.keys["admin"]
    before = _get(keyed, "/v1/health", admin).json()["version"]
    (keyed.root / "acme" / "more.md").write_text("# More\n\nAcme rotates its signing keys by hand.\n")
    errors, versions = [], set()

    def hammer():
        client = Client(keyed.url, api_key=admin)
        for _ in range(15):
            try:
                response = client._http.get("/v1/search", params={"q": QUERY, "k": 3})
                data = response.json()
                assert response.status_code == 200, data
                versions.add(data["version"])
            except Exception as exc:
                errors.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    summary = Client(keyed.url, api_key=admin).refresh_source("acme")
    for t in threads:
        t.join()
    assert errors == []
    assert [s["status"] for s in summary["sources"]] == ["updated"]
    after = _get(keyed, "/v1/health", admin).json()["version"]
    assert after > before and versions <= set(range(before, after + 1))
    time.sleep(keyed.service.RECHECK + 0.1)
    hits = Client(keyed.url, api_key=admin).search("rotates its signing keys by hand", k=3)
    assert any(h.citation.locator.path == "more.md" for h in hits)


def test_serve_refuses_a_public_address_without_keys(open_lake):
    out = CliRunner().invoke(main, ["--lake", open_lake.uri, "serve", "--host", "0.0.0.0"])
    assert out.exit_code != 0 and "127.0.0.1 only" in out.output


def test_client_errors_are_kbflow_errors(open_server):
    with pytest.raises(QueryError, match="k must be"):
        Client(open_server.url).search("x", k=0)


# --- claims over REST and MCP --------------------------------------------------------------
def _post(server, path, token, body):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(server.url + path, json=body, headers=headers, timeout=60)


def test_claims_over_rest_and_mcp_with_keys_scopes_and_roles(keyed):
    editor, reader = keyed.keys["acme_editor"], keyed.keys["payments_reader"]
    billing = create_key(keyed.lake, "acme/billing", "editor")[1]  # the module's billing key may be revoked
    hits = _get(keyed, "/v1/search", editor, q=QUERY, k=10, scope="acme/payments").json()["hits"]
    payments_chunk = next(h["chunk_id"] for h in hits if h["citation"]["source_id"] == "payments")
    billing_hits = _get(keyed, "/v1/search", billing, q=QUERY, k=10).json()["hits"]
    billing_chunk = next(h["chunk_id"] for h in billing_hits if h["citation"]["source_id"] == "billing")
    body = {"text": "Payments signing keys are rotated with rotate.sh", "scope": "acme/payments",
            "evidence": [{"kind": "citation", "ref": payments_chunk}], "tags": ["ops"]}  # fmt: skip
    # writes need an editor of the claim's scope
    assert _post(keyed, "/v1/claims", reader, body).json()["error"]["code"] == "forbidden"
    assert _post(keyed, "/v1/claims", billing, body).status_code == 403
    created = _post(keyed, "/v1/claims", editor, body)
    assert created.status_code == 201, created.text
    claim = created.json()
    assert claim["status"] == "observed" and claim["actor"]["type"] == "user"
    assert claim["evidence"][0]["citation"]["source_id"] == "payments"
    cid = claim["claim_id"]
    # evidence outside the key's scope is not even found
    outside = {**body, "scope": "acme/billing"}
    assert _post(keyed, "/v1/claims", billing, outside).status_code == 404
    inside = {**outside, "evidence": [{"kind": "citation", "ref": billing_chunk}], "text": "Invoices are signed"}
    assert _post(keyed, "/v1/claims", billing, inside).status_code == 201
    no_evidence = _post(keyed, "/v1/claims", editor, {**body, "evidence": []})
    assert no_evidence.status_code == 400 and no_evidence.json()["error"]["code"] == "invalid_claim"
    # readers recall what their scope sees; a key of another scope does not even see it
    recalled = _get(keyed, "/v1/claims", reader, q="how are payment keys rotated").json()
    assert [h["claim"]["claim_id"] for h in recalled["hits"]] == [cid]
    seen_by_billing = _get(keyed, "/v1/claims", billing, q="how are payment keys rotated", k=10).json()["hits"]
    assert cid not in [h["claim"]["claim_id"] for h in seen_by_billing]
    assert _get(keyed, f"/v1/claims/{cid}", billing).status_code == 404
    assert _get(keyed, f"/v1/claims/{cid}", reader).json()["text"] == body["text"]
    assert _get(keyed, "/v1/claims", reader).json()["claims"][0]["claim_id"] == cid  # the newest, without q
    # transitions: editors only; a refused one is a 409 and in the history
    assert _post(keyed, f"/v1/claims/{cid}/verify", reader, {}).status_code == 403
    assert _post(keyed, f"/v1/claims/{cid}/verify", editor, {"reason": "ran it"}).json()["status"] == "verified"
    again = _post(keyed, f"/v1/claims/{cid}/verify", editor, {})
    assert again.status_code == 409 and again.json()["error"]["code"] == "invalid_transition"
    assert _post(keyed, f"/v1/claims/{cid}/promote", editor, {}).status_code == 404
    events = _get(keyed, f"/v1/claims/{cid}/history", reader).json()["events"]
    assert [(e["event"], e["outcome"]) for e in events] == [("learn", "applied"), ("verify", "applied"),
                                                              ("verify", "refused")]  # fmt: skip
    # MCP: an agent learns, recalls and disputes with the same key; no supersede or history tools
    learned = _mcp_http(keyed.url, "learn", {"text": "Acme keys rotate every ninety days", "scope": "acme",
                                              "chunk_ids": [payments_chunk]}, token=editor)  # fmt: skip
    assert not learned.is_error, learned.content[0].text
    agent_claim = learned.structured_content
    assert agent_claim["actor"]["type"] == "agent"
    found = _mcp_http(keyed.url, "recall", {"query": "how often do keys rotate", "k": 3}, token=reader)
    assert agent_claim["claim_id"] in [h["claim"]["claim_id"] for h in found.structured_content["hits"]]
    disputed = _mcp_http(keyed.url, "dispute", {"claim_id": agent_claim["claim_id"], "reason": "now sixty days"},
                         token=editor)  # fmt: skip
    assert disputed.structured_content["status"] == "disputed"
    refused = _mcp_http(keyed.url, "learn", {"text": "guessing", "scope": "acme"}, token=editor)
    assert refused.is_error and "at least one piece of evidence" in refused.content[0].text
    denied = _mcp_http(keyed.url, "verify", {"claim_id": cid}, token=reader)
    assert denied.is_error and "reader" in denied.content[0].text

    async def tool_names():
        import httpx2
        from mcp import Client as McpClient
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {editor}"}, timeout=60) as http:
            async with McpClient(streamable_http_client(f"{keyed.url}/mcp", http_client=http)) as client:
                return {t.name for t in (await client.list_tools()).tools}

    names = asyncio.run(tool_names())
    assert {"learn", "recall", "verify", "dispute"} <= names and not {"supersede", "history"} & names
    # the Client speaks the same API, with kbflow's errors
    client = Client(keyed.url, api_key=editor)
    hit = client.search(QUERY, k=5, scope="acme/payments")[0]
    made = client.learn("Rotation happens with a script", [hit], scope="acme/payments")
    assert made["evidence"][0]["ref"] == hit.chunk_id and client.claim(made["claim_id"])["status"] == "observed"
    assert client.verify(made["claim_id"], reason="read it")["status"] == "verified"
    from kbflow.errors import ClaimError, ClaimTransitionError

    with pytest.raises(ClaimTransitionError, match="cannot move from verified to verified"):
        client.verify(made["claim_id"])
    with pytest.raises(ClaimError, match="at least one piece of evidence"):
        client.learn("no evidence", [], scope="acme")
    assert [e["event"] for e in client.claim_history(made["claim_id"])] == ["learn", "verify", "verify"]
    found = client.recall("rotation script", k=10, scope="acme/payments")  # a claim is seen where its chunks are
    assert made["claim_id"] in [h["claim"]["claim_id"] for h in found]
    # the stale-evidence check spans every scope: a global editor only
    assert _post(keyed, "/v1/claims/check", editor, {}).status_code == 403
    report = _post(keyed, "/v1/claims/check", keyed.keys["admin"], {}).json()
    assert report["claims_checked"] >= 1 and report["stale"] == {}
