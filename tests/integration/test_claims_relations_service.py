"""Relations, valid time, record time and conflicts on every surface of a real server: REST with keys, scopes
and roles, the MCP tools, the Python Client, the web page; and the CLI."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import httpx
import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL
from support import Server, team_lake

from kbflow import Client
from kbflow.cli import main
from kbflow.config import Settings
from kbflow.errors import ClaimError, NotFoundError
from kbflow.service.core import Service
from kbflow.usage.keys import create_key

URL = {"kind": "url", "ref": "https://example.com/acme-10k", "text": "fiscal year ended December 31, 2022"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("relations")
    lake = team_lake(root)
    keys = {
        "payments_editor": create_key(lake, "acme/payments", "editor")[1],
        "payments_reader": create_key(lake, "acme/payments", "reader")[1],
        "billing_editor": create_key(lake, "acme/billing", "editor")[1],
        "acme_editor": create_key(lake, "acme", "editor")[1],
        "acme_reader": create_key(lake, "acme", "reader")[1],
    }
    service = Service(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL), source_roots=[str(root)])
    with Server(service) as server:
        server.keys, server.lake, server.service = keys, lake, service
        yield server


def _call(server, method, path, token, **kw):
    return httpx.request(method, server.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=60, **kw)


def _learn(server, token, text, scope, **fields):
    made = _call(server, "POST", "/v1/claims", token, json={"text": text, "scope": scope, "evidence": [URL], **fields})
    assert made.status_code == 201, made.text
    return made.json()


def _mcp(url, tool, args, token):
    from mcp import Client as McpClient
    from mcp.client.streamable_http import streamable_http_client

    async def go():
        import httpx2

        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with McpClient(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                return await client.call_tool(tool, args)

    return asyncio.run(go())


def test_relations_and_conflicts_over_rest_with_scopes_and_roles(served):
    keys = served.keys
    a = _learn(served, keys["payments_editor"], "Acme's revenue was $1.2 billion in FY2022", "acme/payments")
    b = _learn(served, keys["acme_editor"], "Acme's revenue was $1.5 billion in FY2022", "acme")
    billing = _learn(served, keys["billing_editor"], "Acme's revenue was $1.9 billion in FY2022", "acme/billing")
    assert a["valid_from"] == "2022-01-01" and a["valid_to"] == "2022-12-31"
    body = {"source": a["claim_id"], "type": "contradicts", "target": b["claim_id"], "evidence": [URL]}
    # a reader cannot propose; a key that does not see a claim does not find it
    assert _call(served, "POST", "/v1/relations", keys["payments_reader"], json=body).status_code == 403
    across = {**body, "target": billing["claim_id"]}
    assert _call(served, "POST", "/v1/relations", keys["payments_editor"], json=across).status_code == 404
    # a reader of acme sees both sibling scopes and writes nothing, not even a refused attempt
    audited = len(served.service.claims.store().audit())
    assert _call(served, "POST", "/v1/relations", keys["acme_reader"], json=across).status_code == 403
    assert len(served.service.claims.store().audit()) == audited
    # an editor of acme sees both, but no one scope sees both: refused, recorded, and said why
    refused = _call(served, "POST", "/v1/relations", keys["acme_editor"], json=across)
    assert refused.status_code == 400 and "no reader of one scope sees both" in refused.json()["error"]["message"]
    assert len(served.service.claims.store().audit()) == audited + 1
    made = _call(served, "POST", "/v1/relations", keys["payments_editor"], json={**body, "actor_type": "agent"})
    assert made.status_code == 201, made.text
    rel = made.json()
    assert rel["status"] == "proposed" and rel["scope"] == "acme/payments"
    # conflicts: the reader of payments sees the pair; billing's figure is out of its reach
    found = _call(served, "GET", "/v1/claims/conflicts", keys["payments_reader"]).json()["conflicts"]
    pairs = [{c["a"]["claim_id"], c["b"]["claim_id"]} for c in found]
    assert pairs == [{a["claim_id"], b["claim_id"]}] and found[0]["a"]["evidence"][0]["ref"] == URL["ref"]
    # confirming a contradiction: a person; an agent's confirm is refused (409) and recorded
    path = f"/v1/relations/{rel['relation_id']}/confirm"
    as_agent = _call(served, "POST", path, keys["payments_editor"], json={"actor_type": "agent"})
    assert as_agent.status_code == 400 and "only a person" in as_agent.json()["error"]["message"]
    assert _call(served, "POST", path, keys["payments_reader"], json={}).status_code == 403
    confirmed = _call(served, "POST", path, keys["payments_editor"], json={"reason": "the 10-K says 1.2"})
    assert confirmed.json()["status"] == "confirmed"
    history = _call(served, "GET", f"/v1/relations/{rel['relation_id']}/history", keys["payments_reader"]).json()
    assert [(e["event"], e["outcome"]) for e in history["events"]] == [
        ("relate", "applied"),
        ("confirm", "refused"),
        ("confirm", "applied"),
    ]
    assert _call(served, "GET", f"/v1/relations/{rel['relation_id']}", keys["billing_editor"]).status_code == 404
    listed = _call(served, "GET", f"/v1/claims/{a['claim_id']}/relations", keys["payments_reader"]).json()
    assert [r["relation_id"] for r in listed["relations"]] == [rel["relation_id"]]
    # no claim moved
    for claim in (a, b):
        assert _call(served, "GET", f"/v1/claims/{claim['claim_id']}", keys["acme_editor"]).json()["status"] == (
            "observed"
        )
    # valid time and record time on recall
    editor = keys["acme_editor"]
    at = _call(served, "GET", "/v1/claims", editor, params={"q": "Acme revenue", "valid_at": "2023-03-01"})
    assert at.json()["hits"] == []
    before = _call(served, "GET", "/v1/claims", editor, params={"q": "Acme revenue", "as_of": "2000-01-01"})
    assert before.json()["hits"] == []
    bad = _call(served, "GET", "/v1/claims", keys["acme_editor"], params={"q": "Acme", "valid_at": "someday"})
    assert bad.status_code == 400 and "valid_at: cannot read" in bad.json()["error"]["message"]


def test_the_client_mcp_and_cli_speak_relations_and_time(served, monkeypatch):
    keys = served.keys
    client = Client(served.url, api_key=keys["acme_editor"])
    a = client.learn("Globex's CEO is Jane Doe", [URL], scope="acme", valid_from="2021-01-01")
    b = client.learn("Globex's CEO is John Roe", [URL], scope="acme", valid_from="2022-06-01")
    rel = client.relate(a["claim_id"], "contradicts", b["claim_id"], evidence=[URL], reason="two CEOs")
    assert client.relation(rel["relation_id"])["status"] == "proposed"
    assert {c["a"]["claim_id"] for c in client.conflicts()} >= {a["claim_id"]}
    client.reject_relation(rel["relation_id"], reason="the CEO changed in June 2022")
    assert client.relations(a["claim_id"]) == []
    assert [r["status"] for r in client.relations(a["claim_id"], status=["rejected"])] == ["rejected"]
    with pytest.raises(NotFoundError):
        client.relation("rl_missing")
    with pytest.raises(ClaimError, match="cannot be related to itself"):
        client.relate(a["claim_id"], "refines", a["claim_id"], evidence=[URL])
    now = datetime.now(UTC).isoformat()
    assert [h["claim"]["claim_id"] for h in client.recall("Globex CEO", k=5, valid_at="2021-06-01")] == [a["claim_id"]]
    assert {a["claim_id"], b["claim_id"]} <= {h["claim"]["claim_id"] for h in client.recall("Globex CEO", as_of=now)}
    # MCP: an agent proposes and lists conflicts; it cannot decide a relation
    proposed = _mcp(
        served.url,
        "relate",
        {"source": b["claim_id"], "type": "refines", "target": a["claim_id"], "urls": [URL["ref"]]},
        keys["acme_editor"],
    )
    assert not proposed.is_error, proposed.content[0].text
    assert proposed.structured_content["actor"]["type"] == "agent"
    listed = _mcp(served.url, "conflicts", {}, keys["acme_editor"])
    assert not listed.is_error and "conflicts" in listed.structured_content
    recalled = _mcp(served.url, "recall", {"query": "Globex CEO", "valid_at": "2023-01-01"}, keys["acme_editor"])
    # both hold in 2023 (neither says when it stops): deciding which is a person's call
    assert {h["claim"]["claim_id"] for h in recalled.structured_content["hits"]} == {a["claim_id"], b["claim_id"]}
    # the web page shows a claim's relations and its timeline
    page = httpx.get(
        f"{served.url}/claims/{a['claim_id']}", headers={"Authorization": f"Bearer {keys['acme_editor']}"}, timeout=60
    )
    assert page.status_code == 200, page.text
    assert proposed.structured_content["relation_id"] in page.text and "Timeline" in page.text
    assert "2021-01-01" in page.text
    # the CLI over the same lake
    monkeypatch.setenv("KBFLOW_MODEL", FAST_MODEL)
    runner = CliRunner()
    lake = ["--lake", served.lake.uri]
    out = runner.invoke(main, ["claims", "conflicts", "--json", *lake])
    assert out.exit_code == 0, out.output
    assert "conflicts" in json.loads(out.output)
    out = runner.invoke(main, ["claims", "relations", a["claim_id"], "--all", *lake])
    assert out.exit_code == 0 and rel["relation_id"] in out.output and "[rejected]" in out.output
    out = runner.invoke(main, ["claims", "recall", "Globex CEO", "--valid-at", "2021-06-01", "--json", *lake])
    assert [h["claim"]["claim_id"] for h in json.loads(out.output)["hits"]] == [a["claim_id"]]
    out = runner.invoke(main, ["claims", "recall", "Globex CEO", "--as-of", "2000-01-01", *lake])
    assert out.exit_code == 0 and "no claims match" in out.output
    out = runner.invoke(main, ["claims", "relate", a["claim_id"], "entails", "cl_missing", "--url", URL["ref"], *lake])
    assert out.exit_code != 0 and "no claim 'cl_missing'" in out.output
