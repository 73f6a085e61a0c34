"""kbflow serve beside a hostile page: Host checks (DNS rebinding), cross-site writes, CSRF tokens, headers and
source roots, attacked over HTTP and from another origin in the real Chromium; with and without keys."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import httpx
import pytest
from conftest import FAST_MODEL
from support import CHROMIUM, Server, _browser, csrf_of, free_port

from kbflow.config import Settings
from kbflow.lake import Lake
from kbflow.pipeline import ingest
from kbflow.records import Source
from kbflow.service.core import Service
from kbflow.service.security import Policy, _json_body, check_csrf, csrf_token
from kbflow.usage.keys import create_key

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


# --- the policy, pure ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bind, host, port, allowed",
    [
        ("127.0.0.1", "127.0.0.1:8765", 8765, True),
        ("127.0.0.1", "localhost:8765", 8765, True),
        ("127.0.0.1", "[::1]:8765", 8765, True),
        ("127.0.0.1", "LOCALHOST:8765", 8765, True),
        ("127.0.0.1", "localhost:8766", 8765, False),  # another port is another origin
        ("127.0.0.1", "evil.example:8765", 8765, False),  # DNS rebinding
        ("127.0.0.1", "127.0.0.1.nip.io:8765", 8765, False),
        ("127.0.0.1", "localhost", 8765, False),  # no port: port 80
        ("127.0.0.1", "", 8765, False),
        ("127.0.0.1", None, 8765, False),
        ("127.0.0.1", "user@localhost:8765", 8765, False),
        ("127.0.0.1", "localhost:87x5", 8765, False),
        ("127.0.0.1", "[::1", 8765, False),
        ("0.0.0.0", "localhost:8765", 8765, True),
        ("0.0.0.0", "10.0.0.5:8765", 8765, False),  # every interface names no host: --allow-host does
        ("10.0.0.5", "10.0.0.5:8765", 8765, True),
        ("10.0.0.5", "10.0.0.6:8765", 8765, False),
    ],
)
def test_hosts_a_server_answers_to(bind, host, port, allowed):
    assert Policy.of(bind).host_allowed(host, port, 80) is allowed


def test_allowed_hosts_with_and_without_a_port_and_the_wildcard():
    policy = Policy.of("0.0.0.0", ["kb.example.com", "kb.internal:9000"])
    assert policy.host_allowed("kb.example.com", 8765, 443) and policy.host_allowed("KB.example.com:8443", 8765)
    assert policy.host_allowed("kb.internal:9000", 8765) and not policy.host_allowed("kb.internal:9001", 8765)
    assert not policy.host_allowed("evil.example:8765", 8765)
    assert Policy.of("0.0.0.0", ["*"]).host_allowed("anything.example", 8765)


@pytest.mark.parametrize(
    "origin, allowed",
    [
        ("http://127.0.0.1:8765", True),
        ("http://localhost:8765", True),
        ("http://[::1]:8765", True),
        ("http://127.0.0.1:8766", False),  # a page served by another local server
        ("http://evil.example", False),
        ("null", False),  # sandboxed frames and file:// pages
        ("file://", False),
        ("http://127.0.0.1:8765/path", False),
        ("https://app.example.com", True),  # configured
    ],
)
def test_origins_that_may_write(origin, allowed):
    policy = Policy.of("127.0.0.1", allow_origins=["https://app.example.com/"])
    assert policy.origin_allowed(origin, 8765) is allowed


def test_cross_site_by_origin_or_fetch_metadata_and_command_line_clients_pass():
    policy = Policy.of("127.0.0.1")
    assert policy.cross_site({}, 8765) is None  # curl, httpx, kbflow.Client: no Origin, no Sec-Fetch-*
    assert policy.cross_site({"origin": "http://127.0.0.1:8765", "sec-fetch-site": "same-origin"}, 8765) is None
    assert "another site" in policy.cross_site({"sec-fetch-site": "cross-site"}, 8765)
    # Referrer-Policy no-referrer: the browser sends Origin null on the page's own forms, and says same-origin
    assert policy.cross_site({"origin": "null", "sec-fetch-site": "same-origin"}, 8765) is None
    assert policy.cross_site({"origin": "null", "sec-fetch-site": "cross-site"}, 8765)  # a sandboxed foreign frame
    assert policy.cross_site({"origin": "null"}, 8765)
    assert "--allow-origin" in policy.cross_site({"origin": "http://127.0.0.1:1"}, 8765)


@pytest.mark.parametrize(
    "headers, ok",
    [
        ({"content-type": "application/json"}, True),
        ({"content-type": "application/json; charset=utf-8"}, True),
        ({"content-type": "application/merge-patch+json"}, True),
        ({"content-type": "text/plain"}, False),  # a "simple" cross-site request
        ({"content-type": "application/x-www-form-urlencoded"}, False),
        ({"content-type": "multipart/form-data; boundary=x"}, False),
        ({}, True),  # no body: POST /v1/sources/ID/refresh from a command line
        ({"content-length": "0"}, True),
        ({"content-length": "12"}, False),
        ({"transfer-encoding": "chunked"}, False),
    ],
)
def test_the_api_takes_json_bodies_only(headers, ok):
    assert _json_body(headers) is ok


def test_csrf_tokens_are_bound_to_the_cookie_and_the_server():
    policy, other = Policy.of("127.0.0.1"), Policy.of("127.0.0.1")
    scope = {"state": {"kbflow_csrf": "cookie-a"}}
    token = csrf_token(policy, scope)
    assert check_csrf(policy, scope, token) is None
    assert "not this server's" in check_csrf(other, scope, token)  # restarted, or forged elsewhere
    assert "does not match" in check_csrf(policy, {"state": {"kbflow_csrf": "cookie-b"}}, token)
    assert "no CSRF token" in check_csrf(policy, scope, None)
    assert "not this server's" in check_csrf(policy, scope, "cookie-a")  # the cookie itself is no token


# --- a real server, keyless and keyed -------------------------------------------------------------------
@pytest.fixture(scope="module", params=["keyless", "keyed"])
def target(request, tmp_path_factory):
    """A served lake with one indexed and one pending source; a secret folder outside the source roots."""
    root = tmp_path_factory.mktemp(f"target-{request.param}")
    allowed, secret = root / "allowed", root / "secret"
    for folder in (allowed / "docs", allowed / "later", secret):
        folder.mkdir(parents=True)
    (allowed / "docs" / "a.md").write_text("# Lighthouses\n\nA lighthouse guides ships at night.\n")
    (allowed / "later" / "b.md").write_text("# Later\n\nRegistered, not yet ingested.\n")
    (secret / "credentials.md").write_text(f"# Credentials\n\n{SECRET}\n")
    lake = Lake(str(root / "lake"))
    lake.register(Source("docs", "docs", str(allowed / "docs")))
    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)
    assert ingest(lake, settings).ok
    lake.register(Source("later", "docs", str(allowed / "later")))
    token = create_key(lake, "global", "editor")[1] if request.param == "keyed" else None
    service = Service(lake, settings, source_roots=[str(allowed)])
    with Server(service) as server:
        server.lake, server.secret, server.allowed, server.token = lake, secret, allowed, token
        server.auth = {"Authorization": f"Bearer {token}"} if token else {}
        yield server


def _untouched(target) -> None:
    """Nothing registered, ingested or removed by an attack: the two sources as they were."""
    sources = {s.source_id: s for s in target.lake.sources()}
    assert set(sources) == {"docs", "later"}, sources
    assert sources["later"].status == "pending" and sources["docs"].status == "indexed"
    assert not any(str(target.secret) in s.uri for s in sources.values())


PATHS = ["/", "/sources", "/login", "/v1/health", "/v1/sources", "/v1/search?q=x", "/docs", "/openapi.json", "/mcp"]


@pytest.mark.parametrize("path", PATHS)
def test_a_foreign_host_gets_421_on_every_route_before_any_handler(target, path):
    """DNS rebinding: the browser connects to 127.0.0.1 but names the attacker's host."""
    rebound = httpx.get(target.url + path, headers={"Host": f"evil.example:{target.port}", **target.auth})
    assert rebound.status_code == 421 and rebound.text.count("\n") <= 1, rebound.text
    assert "evil.example" in rebound.text and "--allow-host" in rebound.text
    assert SECRET not in rebound.text and "Lighthouses" not in rebound.text
    own = httpx.get(target.url + path, headers={"Host": f"localhost:{target.port}", **target.auth})
    assert own.status_code != 421


def test_a_foreign_host_cannot_write_either(target):
    response = httpx.post(
        target.url + "/v1/sources",
        json={"uri": str(target.allowed / "later"), "type": "docs", "id": "x"},
        headers={"Host": f"evil.example:{target.port}", **target.auth},
    )
    assert response.status_code == 421
    _untouched(target)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:1"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_cross_site_api_writes_get_403(target, headers):
    for method, path, body in [
        ("POST", "/v1/sources", {"uri": str(target.allowed / "docs"), "type": "docs", "id": "y"}),
        ("POST", "/v1/sources/later/refresh", None),
        ("DELETE", "/v1/sources/docs", None),
        ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ]:
        response = httpx.request(method, target.url + path, json=body, headers={**headers, **target.auth})
        assert response.status_code == 403, (path, response.text)
        assert response.json()["error"]["code"] == "cross_site"
    _untouched(target)


def test_a_simple_text_plain_post_never_reaches_the_api(target):
    body = f'{{"uri": "{target.secret}", "type": "docs"}}'
    response = httpx.post(
        target.url + "/v1/sources", content=body, headers={"Content-Type": "text/plain", **target.auth}
    )
    assert response.status_code == 415 and response.json()["error"]["code"] == "unsupported_media_type"
    _untouched(target)


def test_forms_need_the_csrf_token_of_this_browser(target):
    with httpx.Client(base_url=target.url, timeout=60) as browser:
        if target.token:
            page = browser.get("/login").text
            browser.post("/login", data={"key": target.token, "next": "/", "csrf": csrf_of(page)})
        page = browser.get("/sources")
        token = csrf_of(page.text)
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        for data in ({}, {"csrf": "forged"}, {"csrf": token + "x"}):
            refused = browser.post("/sources/later/refresh", data=data)
            assert refused.status_code == 403 and "CSRF" in refused.text
        stranger = httpx.post(
            target.url + "/sources/later/refresh", data={"csrf": token}, cookies={"kbflow_csrf": "another-browser"}
        )
        if target.token:  # a stranger has no key: sent to sign in, before any form is read
            assert stranger.status_code == 303 and stranger.headers["location"].startswith("/login")
        else:  # keyless: the token is bound to another browser's cookie
            assert stranger.status_code == 403 and "CSRF" in stranger.text
        _untouched(target)
        outside = browser.post("/sources/add", data={"uri": str(target.secret), "type": "docs", "csrf": token})
        assert outside.status_code == 303 and "source-root" in httpx.URL(outside.headers["location"]).params["error"]
        _untouched(target)


def test_folders_outside_the_roots_are_refused_over_http_even_without_keys(target):
    response = httpx.post(target.url + "/v1/sources", json={"uri": str(target.secret), "type": "docs"},
                          headers=target.auth)  # fmt: skip
    assert response.status_code == 403 and "--source-root" in response.json()["error"]["message"]
    dotdot = str(target.allowed / ".." / "secret")
    assert (
        httpx.post(target.url + "/v1/sources", json={"uri": dotdot, "type": "docs"}, headers=target.auth).status_code
        == 403
    )
    _untouched(target)


@pytest.mark.parametrize("path", ["/", "/sources", "/login", "/versions", "/v1/health", "/chunks/nope", "/nope"])
def test_every_response_carries_the_security_headers(target, path):
    response = httpx.get(target.url + path, headers=target.auth)
    headers = response.headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "script-src" not in headers["content-security-policy"]  # no script at all: default-src 'none'
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert "access-control-allow-origin" not in headers  # CORS is off


def test_source_files_are_sandboxed_plain_text(target):
    hit = httpx.get(target.url + "/v1/search", params={"q": "lighthouse", "k": 1}, headers=target.auth).json()
    original = httpx.get(target.url + f"/chunks/{hit['hits'][0]['chunk_id']}/file", headers=target.auth)
    assert original.status_code == 200 and original.headers["content-type"].startswith("text/plain")
    assert original.headers["content-security-policy"].startswith("sandbox")
    assert original.headers["x-content-type-options"] == "nosniff"


def test_docs_scripts_run_only_with_their_nonce(target):
    docs = httpx.get(target.url + "/docs")

    def nonce_of(response) -> str:
        return response.headers["content-security-policy"].split("'nonce-")[1].split("'")[0]

    nonce = nonce_of(docs)
    assert docs.text.count("<script") == docs.text.count(f'nonce="{nonce}"') >= 2
    assert nonce != nonce_of(httpx.get(target.url + "/docs"))  # a new nonce per page


def test_configured_origins_may_write_and_read_with_cors(tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nAbout origins.\n")
    lake.register(Source("d", "docs", str(tmp_path / "d")))
    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)
    ingest(lake, settings)
    service = Service(lake, settings, source_roots=[str(tmp_path)])
    with Server(service, allow_origins=["https://app.example.com"], allow_hosts=["kb.example.com"]) as server:
        origin = {"Origin": "https://app.example.com"}
        read = httpx.get(server.url + "/v1/sources", headers=origin)
        assert read.headers["access-control-allow-origin"] == "https://app.example.com"
        cite = httpx.post(server.url + "/v1/citations", json={"chunk_ids": ["nope"]}, headers=origin)
        assert cite.status_code != 403
        assert httpx.get(server.url + "/v1/health", headers={"Host": "kb.example.com"}).status_code == 200
        mcp = httpx.post(
            server.url + "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Host": "kb.example.com", "Accept": "application/json, text/event-stream"},
        )
        assert mcp.status_code != 421, mcp.text  # the MCP SDK's own check agrees with --allow-host
        other = httpx.post(server.url + "/v1/citations", json={"chunk_ids": ["x"]}, headers={"Origin": "https://x.io"})
        assert other.status_code == 403


# --- the attack, in a real browser -----------------------------------------------------------------------
ATTACK = {
    "form.html": """<form method=post action="{target}/sources/add">
<input name=uri value="{secret}"><input name=type value=docs><input name=id value=stolen></form>
<script>document.forms[0].submit()</script>""",
    "refresh.html": """<form method=post action="{target}/sources/later/refresh"></form>
<script>document.forms[0].submit()</script>""",
    "fetch.html": """<pre id=out></pre><script>
const out = [];
const log = (what, r) => {{ out.push(what + ' ' + r); document.getElementById('out').textContent = out.join('\\n'); }};
(async () => {{
  const body = JSON.stringify({{uri: "{secret}", type: "docs", id: "stolen"}});
  for (const path of ['/v1/sources', '/v1/sources/later/refresh']) {{
    try {{ const r = await fetch('{target}' + path, {{method: 'POST', mode: 'no-cors', credentials: 'include',
          headers: {{'Content-Type': 'text/plain'}}, body}}); log('post ' + path, r.type); }}
    catch (e) {{ log('post ' + path, 'error'); }}
  }}
  try {{ const r = await fetch('{target}/v1/sources', {{credentials: 'include'}}); log('read', await r.text()); }}
  catch (e) {{ log('read', 'blocked'); }}
  log('done', 1);
}})();
</script>""",
    "frame.html": """<iframe id=f src="{target}/sources" width=800 height=400></iframe>""",
    "img.html": """<img src="{target}/v1/search?q=img-canary"><img src="{target}/?q=page-canary">
<script src="{target}/v1/search?q=script-canary"></script><p id=done>done</p>""",
}


class _Attacker:
    """Another origin: a plain HTTP server on another port of 127.0.0.1 serving the attack pages."""

    def __init__(self, folder: Path) -> None:
        quiet = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
        self.port = free_port()
        handler = functools.partial(quiet, directory=str(folder))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()


@pytest.fixture(scope="module")
def chromium(target):
    sync_api = _browser()
    with sync_api.sync_playwright() as p:
        # rebind.test resolves to 127.0.0.1 in this browser: DNS rebinding without a DNS server
        args = ["--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP rebind.test 127.0.0.1"]
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        yield browser
        browser.close()


@pytest.fixture
def attack(chromium, target, tmp_path):
    for name, page in ATTACK.items():
        (tmp_path / name).write_text(page.format(target=target.url, secret=target.secret))
    attacker = _Attacker(tmp_path)
    context = chromium.new_context()
    if target.token:  # the user is signed in: their cookie goes with every request to 127.0.0.1
        context.add_cookies([{"name": "kbflow_key", "value": target.token, "url": target.url}])
    page = context.new_page()
    yield attacker, page
    context.close()
    attacker.close()
    _untouched(target)


def test_a_form_post_from_another_origin_registers_nothing(attack, target):
    attacker, page = attack
    for name in ("form.html", "refresh.html"):
        with page.expect_navigation(url=f"{target.url}/**"):
            page.goto(f"{attacker.url}/{name}")
        assert "403" in page.content() and "Origin" in page.content()
        _untouched(target)


def test_a_fetch_from_another_origin_neither_writes_nor_reads(attack, target):
    attacker, page = attack
    page.goto(f"{attacker.url}/fetch.html")
    page.wait_for_function("document.getElementById('out').textContent.includes('done')")
    out = page.inner_text("#out")
    assert "read blocked" in out and "docs" not in out.split("read")[1], out  # CORS keeps the answer from it
    _untouched(target)


def test_the_page_never_renders_in_another_sites_frame(attack, target):
    attacker, page = attack
    page.goto(f"{attacker.url}/frame.html")
    page.wait_for_timeout(1000)
    frame = next(f for f in page.frames if f != page.main_frame)
    assert frame.query_selector("#sources") is None  # X-Frame-Options / frame-ancestors: nothing shown


def test_a_rebound_name_reads_nothing_in_the_browser(attack, target):
    _, page = attack
    response = page.goto(f"http://rebind.test:{target.port}/v1/sources")
    assert response.status == 421 and "docs" not in page.content()
    response = page.goto(f"http://rebind.test:{target.port}/sources")
    assert response.status == 421 and "Lighthouses" not in page.content()


def test_an_image_or_script_tag_on_another_site_runs_no_search(attack, target):
    """Fetch Metadata: the browser marks the subresource requests cross-site (here same-site: another port of
    127.0.0.1), and the server refuses them before any search runs or any log row is written."""
    from kbflow import usage

    attacker, page = attack
    page.goto(f"{attacker.url}/img.html")
    page.wait_for_selector("#done")
    page.wait_for_timeout(500)
    usage.flush(target.lake)
    asked = set(usage.read_log(target.lake, "query_log")["query"].to_list())
    assert not asked & {"img-canary", "page-canary", "script-canary"}, asked
