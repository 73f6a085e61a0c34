"""What several test modules share: a real server on a free port, a lake of teams' scopes, the browser for the
web page's tests, a BEIR set written to disk, the sample PDF builder. Imported by name (``from support import
Server``): ``tests/`` is on the path of every test module through its ``conftest.py``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from conftest import FAST_MODEL, SAMPLES

from kbflow.config import Settings
from kbflow.lake import Lake
from kbflow.pipeline import ingest
from kbflow.records import Source
from kbflow.service.app import create_app
from kbflow.service.core import Service

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

_spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdf)


TEAMS = {
    "handbook": ("global", "# Handbook\n\nVacation policy: twenty days a year for everyone.\n"),
    "acme": ("acme", "# Acme\n\nAcme signing keys rotate every ninety days.\n"),
    "payments": ("acme/payments", "# Payments runbook\n\nTo rotate the signing key of payments, run rotate.sh.\n"),
    "billing": ("acme/billing", "# Billing runbook\n\nBilling invoices are signed with the billing signing key.\n"),
}
QUERY = "how do I rotate the signing key"


def team_lake(root: Path) -> Lake:
    lake = Lake(str(root / "lake"))
    for sid, (scope, text) in TEAMS.items():
        folder = root / sid
        folder.mkdir(parents=True)
        (folder / f"{sid}.md").write_text(text)
        lake.register(Source(sid, "docs", str(folder), scope=scope))
    assert ingest(lake, Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)).ok
    return lake


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """uvicorn serving ``create_app(service)`` in a thread, on a free port."""

    def __init__(self, service: Service, **app_options) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        app = create_app(service, **app_options)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def _browser():
    if CHROMIUM is None:
        if os.environ.get("KBFLOW_BROWSER_TESTS") == "require":
            pytest.fail("chromium is not installed; `make test` installs it (apt-get install chromium)")
        pytest.skip("no chromium (make test installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    return sync_api


def csrf_of(page: str) -> str:
    """The CSRF token a page's forms carry."""
    return re.search(r"name=csrf value='([^']+)'", page).group(1)


DOCS = [
    ("d1", "Rank fusion", "Reciprocal rank fusion adds one over k plus rank for every leg."),
    ("d2", "Lance tables", "Every write to a Lance table commits a new version of the dataset."),
    ("d3", "Word boxes", "PDF citations carry the page and the union of word boxes in points."),
    ("d4", "Tickets", "Each comment of an issue thread becomes its own unit with a ticket locator."),
]
QUERIES = [("q1", "how are ranks fused"), ("q2", "table version commit"), ("q3", "pdf page box citation")]
QRELS = [("q1", "d1", 1), ("q2", "d2", 2), ("q3", "d3", 1)]


def write_beir(root, docs, queries, qrels):
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as fh:
        for _id, title, text in docs:
            fh.write(json.dumps({"_id": _id, "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w") as fh:
        for _id, text in queries:
            fh.write(json.dumps({"_id": _id, "text": text}) + "\n")
    with open(root / "qrels" / "test.tsv", "w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q, d, s in qrels:
            fh.write(f"{q}\t{d}\t{s}\n")


def encrypted_pdf(data: bytes) -> bytes:
    """``data`` (a PDF) encrypted with a user password, as a locked PDF a user has arrives."""
    import io

    pypdf = pytest.importorskip("pypdf")
    reader, writer = pypdf.PdfReader(io.BytesIO(data)), pypdf.PdfWriter()
    writer.append(reader)
    writer.encrypt(user_password="secret", owner_password="owner")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
