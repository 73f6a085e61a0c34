"""Web sources by URL: fetched behind a guard against server-side request forgery, kept in the lake, refreshed
with conditional requests. The pages come from a local HTTP server that only the explicit test switch
(``KBFLOW_FETCH_ALLOW_HOSTS``) lets through."""

import json
import time
from http.server import BaseHTTPRequestHandler

import pytest
from click.testing import CliRunner
from conftest import FAST_MODEL, local_http

from kbflow import Retriever, resolve
from kbflow.cli import main
from kbflow.errors import SourceError
from kbflow.sources.web import fetch as fetchmod

PAGES = {"version": 1}


def _page(version: int) -> bytes:
    body = " ".join(f"Turbine blade inspection step {i} for revision {version}." for i in range(40))
    return (
        f"<html><head><title>Blades v{version}</title></head><body><nav>Menu</nav>"
        f"<article><h1>Blade inspection</h1><p>{body}</p></article></body></html>"
    ).encode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self):
        version = PAGES["version"]
        etag = f'"v{version}"'
        if self.path == "/page.html":
            if self.headers.get("If-None-Match") == etag:
                return self._send(304, None, [("ETag", etag)])
            return self._send(200, _page(version), [("Content-Type", "text/html; charset=utf-8"), ("ETag", etag)])
        if self.path == "/host":
            return self._send(200, f"<p>{self.headers.get('Host')}</p>".encode(), [("Content-Type", "text/html")])
        if self.path == "/redirect":
            return self._send(302, b"", [("Location", "/page.html")])
        if self.path == "/to-private":
            return self._send(302, b"", [("Location", "http://10.0.0.1/admin")])
        if self.path == "/to-metadata":
            return self._send(301, b"", [("Location", "http://169.254.169.254/latest/meta-data/")])
        if self.path == "/loop":
            return self._send(302, b"", [("Location", "/loop")])
        if self.path == "/pdf":
            return self._send(200, b"%PDF-1.4", [("Content-Type", "application/pdf")])
        if self.path == "/big":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            for _ in range(64):
                self.wfile.write(b"<p>" + b"x" * 65536 + b"</p>")
            return None
        if self.path == "/slow":
            time.sleep(3)
            return self._send(200, b"<p>late</p>", [("Content-Type", "text/html")])
        return self._send(404, b"")


@pytest.fixture
def server(monkeypatch):
    PAGES["version"] = 1
    with local_http(Handler, monkeypatch) as url:
        yield url


BLOCKED = [
    "http://127.0.0.1/",
    "http://localhost:8080/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::127.0.0.1]/",
    "http://[64:ff9b::a00:1]/",  # NAT64 of 10.0.0.1
    "http://[2002:a00:1::1]/",  # 6to4 of 10.0.0.1
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0/",
    "http://224.0.0.1/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[ff02::1]/",
    "http://2130706433/",  # 127.0.0.1 as one number
    "http://0177.0.0.1/",  # octal
]


@pytest.mark.parametrize("url", BLOCKED)
def test_private_loopback_link_local_and_reserved_addresses_are_refused(url, monkeypatch):
    monkeypatch.delenv("KBFLOW_FETCH_ALLOW_HOSTS", raising=False)
    with pytest.raises(SourceError, match=r"refused: .* \(server-side request forgery guard\)|cannot resolve"):
        fetchmod.fetch(url, timeout=5)


@pytest.mark.parametrize(
    "url, message",
    [
        ("file:///etc/passwd", "only http and https URLs are fetched"),
        ("ftp://example.com/x", "only http and https URLs are fetched"),
        ("gopher://127.0.0.1:70/", "only http and https URLs are fetched"),
        ("http://user:secret@example.com/", "URLs with credentials in them are not fetched"),
        ("http:///nohost", "no host in the URL"),
    ],
)
def test_other_schemes_and_credentials_are_refused(url, message):
    with pytest.raises(SourceError, match=message):
        fetchmod.fetch(url)


def test_the_test_switch_lets_exactly_one_host_and_port_through(server, monkeypatch):
    assert fetchmod.fetch(server + "/page.html").status == 200
    other = server.rsplit(":", 1)[0] + ":1"  # the same host, another port: still refused
    with pytest.raises(SourceError, match="refused"):
        fetchmod.fetch(other + "/page.html")


def test_redirects_are_followed_by_hand_and_every_hop_is_checked(server):
    got = fetchmod.fetch(server + "/redirect")
    assert got.status == 200 and got.url == server + "/page.html" and got.redirects == [server + "/redirect"]
    with pytest.raises(SourceError, match=r"http://10\.0\.0\.1/admin: refused"):
        fetchmod.fetch(server + "/to-private")
    with pytest.raises(SourceError, match=r"169\.254\.169\.254/latest/meta-data/: refused"):
        fetchmod.fetch(server + "/to-metadata")
    with pytest.raises(SourceError, match="more than 5 redirects"):
        fetchmod.fetch(server + "/loop")


def test_size_time_and_type_limits(server):
    with pytest.raises(SourceError, match="over the 1048576-byte limit"):
        fetchmod.fetch(server + "/big", max_bytes=1 << 20)
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="time limit|within"):
        fetchmod.fetch(server + "/slow", timeout=1)
    assert time.monotonic() - t0 < 3
    with pytest.raises(SourceError, match=r"not an HTML page \(application/pdf\)"):
        fetchmod.fetch(server + "/pdf")


def test_the_connection_goes_to_the_checked_address_not_a_fresh_lookup(server):
    port = int(server.rsplit(":", 1)[1])
    conn = fetchmod._PinnedHTTP("name-that-does-not-resolve.invalid", port, "127.0.0.1", timeout=5)
    conn.request("GET", "/host", headers={"Host": f"name-that-does-not-resolve.invalid:{port}"})
    assert b"name-that-does-not-resolve.invalid" in conn.getresponse().read()
    conn.close()


def test_a_url_source_is_fetched_kept_in_the_lake_resolved_and_refreshed(server, tmp_path):
    lake = str(tmp_path / "lake")
    runner = CliRunner()
    url = server + "/page.html"
    out = runner.invoke(main, ["--lake", lake, "add", url, "--type", "web"])
    assert out.exit_code == 0 and "registered 127.0.0.1-page (web" in out.output, out.output
    out = runner.invoke(main, ["--lake", lake, "ingest", "--model", FAST_MODEL, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["sources"][0]["status"] == "new"
    hits = Retriever.open(lake).search("turbine blade inspection revision", k=3)
    assert hits and hits[0].citation.uri == url and hits[0].citation.locator.url == url
    from kbflow.lake import Lake

    assert resolve(hits[0], lake=Lake(lake)) == hits[0].text  # from the copy kept in the lake
    raw = list((tmp_path / "lake" / "raw" / "127.0.0.1-page").glob("*.html"))
    assert len(raw) == 1 and raw[0].read_bytes() == _page(1)
    stale = runner.invoke(main, ["--lake", lake, "status", "--stale", "--json"])
    assert stale.exit_code == 0 and json.loads(stale.stdout)["stale"] == []  # a 304: unchanged
    PAGES["version"] = 2
    stale = runner.invoke(main, ["--lake", lake, "status", "--stale", "--json"])
    assert stale.exit_code == 3 and json.loads(stale.stdout)["stale"][0]["reason"] == "changed"
    out = runner.invoke(main, ["--lake", lake, "ingest", "--model", FAST_MODEL, "--json"])
    assert json.loads(out.stdout)["sources"][0]["status"] == "updated"
    assert "revision 2" in Retriever.open(lake).search("turbine blade revision", k=1)[0].text
    # the first copy stays: older versions and tags still resolve against what they indexed
    assert len(list((tmp_path / "lake" / "raw" / "127.0.0.1-page").glob("*.html"))) == 2


def test_add_refuses_a_private_url_at_once(tmp_path, monkeypatch):
    monkeypatch.delenv("KBFLOW_FETCH_ALLOW_HOSTS", raising=False)
    out = CliRunner().invoke(
        main, ["--lake", str(tmp_path / "lake"), "add", "http://169.254.169.254/", "--type", "web"]
    )
    assert out.exit_code == 1 and "refused" in out.output and "Traceback" not in out.output
