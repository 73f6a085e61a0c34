"""Scopes that nest, the query and citation logs, insights and API keys (library and CLI)."""

from __future__ import annotations

import json
import logging
import threading

import pytest
from click.testing import CliRunner

from kbflow import Retriever, insights, usage
from kbflow import schema as S
from kbflow.cli import main
from kbflow.errors import AuthError, ConfigError, NotFoundError, QueryError
from kbflow.lake import Lake
from kbflow.records import scopes
from kbflow.usage.keys import KeyRing, create_key, list_keys, revoke_key


def test_scope_paths_nest():
    assert scopes.normalize(" acme/payments ") == "acme/payments"
    assert scopes.visible("acme/payments/eu") == ["acme/payments/eu", "acme/payments", "acme", "global"]
    assert scopes.visible("global") == ["global"]
    assert scopes.contains("acme", "acme/payments") and scopes.contains("global", "x/y")
    assert not scopes.contains("acme", "acmeco") and not scopes.contains("acme/payments", "acme")
    for bad, why in (("", "path like"), ("a//b", "empty part"), ("/a", "empty part"), ("a b", "part 'a b'"),
                     ("acme/global", "root"), ("/".join("abcdefghi"), "levels")):  # fmt: skip
        with pytest.raises(ConfigError, match=why):
            scopes.normalize(bad)


def test_nested_scopes_filter_both_legs(ingested):
    # the tiny corpus: docs and repo in scope "proj", records global; add a nested scope below proj
    r = Retriever.open(ingested)
    assert {h.scope for h in r.search("fusion", k=10, scope="proj/team")} <= {"proj", "global"}  # below: allowed
    with pytest.raises(QueryError, match="unknown scope 'elsewhere'"):
        r.search("fusion", scope="elsewhere")
    with pytest.raises(QueryError, match="empty part"):
        r.search("fusion", scope="proj//x")
    for mode in ("dense", "bm25"):
        assert {h.scope for h in r.search("bridge rivers fusion", k=10, scope="global", mode=mode)} == {"global"}


def test_searches_are_logged_with_their_signal(ingested):
    r = Retriever.open(ingested)
    hits = r.search("reciprocal rank fusion", k=3, scope=" proj ", kinds=["doc", "code"], caller="nb-1")
    nothing = r.search("zzzqqq", k=3, mode="bm25")
    assert hits.query_id and nothing.query_id and not nothing
    usage.flush()
    rows = {row[S.QUERY_ID]: row for row in usage.read_log(ingested, S.QUERY_LOG).iter_rows(named=True)}
    row = rows[hits.query_id]
    assert row[S.ORIGIN] == "python" and row[S.CALLER] == "nb-1" and row[S.SCOPE] == "proj"
    assert json.loads(row[S.FILTERS]) == {"kinds": ["doc", "code"]}
    assert row[S.RESULTS] == len(hits) and row[S.TOP_SCORE] == hits[0].score and row[S.SEARCH_VERSION] == r.version
    assert rows[nothing.query_id][S.RESULTS] == 0
    r.rank("reciprocal rank fusion", k=3)  # evaluation: not logged
    assert usage.flush() == 0
    report = insights(ingested, since="1h")
    assert report.queries == 2
    gaps = report.content_gaps.to_dicts()
    assert [(g["query"], g["reason"]) for g in gaps] == [("zzzqqq", "no hits")]
    assert set(report.never_cited["source_id"].to_list()) == {"docs", "repo", "recs"}
    assert "Content gaps" in report.to_markdown()


def test_cite_keeps_what_was_cited(ingested):
    r = Retriever.open(ingested)
    hits = r.search("reciprocal rank fusion", k=2)
    assert r.cite(hits[:1], turn_id="t1") == 1
    assert hits[:1].query_id == hits.query_id  # a slice keeps the search's metadata
    with pytest.raises(QueryError, match="Hit objects"):
        r.cite(["chunk-id"])
    usage.flush()
    row = usage.read_log(ingested, S.CITATION_LOG).row(0, named=True)
    assert row[S.TEXT] == hits[0].text and row[S.QUERY_ID] == hits.query_id and row[S.TURN_ID] == "t1"
    assert json.loads(row[S.CITATION])["locator"] == hits[0].citation.locator.to_dict()
    report = insights(ingested, since=None)
    assert report.cited_sources.row(0, named=True)[S.SOURCE_ID] == hits[0].citation.source_id


def test_a_failing_log_never_fails_a_search(ingested, monkeypatch, caplog):
    r = Retriever.open(ingested)
    usage.flush()

    def broken(*_args, **_kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(Lake, "append", broken)
    with caplog.at_level(logging.WARNING, logger="kbflow.usage"):
        assert r.search("fusion", k=2)
        assert usage.flush() == 0
    assert "could not write 1 query_log rows (disk full)" in caplog.text


def test_cli_search_logs_unless_told_not_to(ingested):
    runner = CliRunner()
    for extra in ([], ["--no-log"]):
        out = runner.invoke(main, ["--lake", ingested.uri, "search", "fusion", "-k", "1", *extra])
        assert out.exit_code == 0, out.output
    usage.flush()
    assert usage.read_log(ingested, S.QUERY_LOG)[S.ORIGIN].to_list() == ["cli"]
    out = runner.invoke(main, ["--lake", ingested.uri, "insights", "--since", "all", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["by_origin"][0]["origin"] == "cli"
    assert runner.invoke(main, ["--lake", ingested.uri, "insights", "--since", "soon"]).exit_code == 1


def test_api_keys_are_hashed_scoped_and_revocable(lake_path):
    lake = Lake(lake_path)
    key, token = create_key(lake, "acme/payments", "reader", name="bot")
    assert token.startswith(f"kbf_{key.key_id}_")
    stored = lake.scan(S.API_KEYS).to_pylist()[0]
    assert token.split("_", 2)[2] not in json.dumps(stored, default=str)  # only the hash is kept
    ring = KeyRing(lake)
    assert ring.enabled and ring.verify(token) == key
    assert key.can_read("acme/payments/eu") and not key.can_read("acme")
    assert key.can_see("acme") and key.can_see("global") and not key.can_see("acme/billing")
    for bad in (None, "", "kbf_x", token + "x", "Bearer " + token):
        with pytest.raises(AuthError):
            ring.verify(bad)
    with pytest.raises(ConfigError, match="role"):
        create_key(lake, "acme", "owner")
    with pytest.raises(NotFoundError):
        revoke_key(lake, "nope")
    assert revoke_key(lake, key.key_id).revoked_at is not None
    ring.TTL = 0
    with pytest.raises(AuthError, match="revoked"):
        ring.verify(token)
    assert [k.key_id for k in list_keys(lake)] == [key.key_id]


def test_keys_cli(lake_path):
    runner = CliRunner()
    out = runner.invoke(main, ["--lake", lake_path, "keys", "create", "--scope", "acme", "--role", "editor"])
    assert out.exit_code == 0, out.output
    token = out.stdout.strip()
    key_id = token.split("_")[1]
    listed = runner.invoke(main, ["--lake", lake_path, "keys", "list", "--json"])
    assert json.loads(listed.stdout)["role"] == "editor" and token not in listed.stdout
    assert runner.invoke(main, ["--lake", lake_path, "keys", "revoke", key_id]).exit_code == 0
    assert "revoked" in runner.invoke(main, ["--lake", lake_path, "keys", "list"]).stdout
    bad = runner.invoke(main, ["--lake", lake_path, "keys", "create", "--scope", "a//b"])
    assert bad.exit_code == 1 and "empty part" in bad.output


class _CountingEvent(threading.Event):
    def __init__(self) -> None:
        super().__init__()
        self.sets = 0

    def set(self) -> None:
        self.sets += 1
        super().set()


def test_write_at_once_wakes_the_writer_for_every_row(monkeypatch):
    from kbflow.usage import log as usage_log

    class OneRow:
        def add(self, table, rows):
            return len(rows)  # far under FLUSH_ROWS: a batch would wait for the timer

    wake = _CountingEvent()
    monkeypatch.setattr(usage_log, "_wake", wake)
    monkeypatch.setattr(usage_log, "_buffer", lambda lake: OneRow())
    usage_log._enqueue(None, S.QUERY_LOG, [{}])
    assert wake.sets == 0
    usage.write_at_once()
    try:
        usage_log._enqueue(None, S.QUERY_LOG, [{}])
        usage_log._enqueue(None, S.QUERY_LOG, [{}])
    finally:
        usage.write_at_once(False)
    assert wake.sets == 2
