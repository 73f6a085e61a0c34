"""One way to register a source (kbflow.pipeline.register_source): the CLI, REST and Python store the same
options under the same path rules, and show a source as one JSON shape."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from kbflow import Lake
from kbflow.cli import main
from kbflow.config import Settings
from kbflow.errors import AccessDeniedError, ConfigError, QueryError, SourceError
from kbflow.pipeline import register_source
from kbflow.service.core import Service
from tests.conftest import FAST_MODEL


@pytest.fixture
def lake(tmp_path):
    return Lake(str(tmp_path / "lake"))


def test_options_are_checked_and_kept_across_re_registration(lake, docs_dir):
    first = register_source(lake, str(docs_dir), "docs", options={"refresh": "0 */6 * * *", "max_file_mb": 2})
    assert first.source.options == {"refresh": "0 */6 * * *", "max_file_mb": 2.0}
    again = register_source(lake, str(docs_dir), "docs", scope="acme", options={"max_file_mb": None})
    assert again.source.options == first.source.options and again.source.scope == "acme"
    cleared = register_source(lake, str(docs_dir), "docs", options={"refresh": "none"})
    assert cleared.source.options == {"max_file_mb": 2.0}
    assert [s.options for s in lake.sources()] == [{"max_file_mb": 2.0}]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"all_pages": True}, "all_pages (true or false) is for web sources"),
        ({"crawl": True}, "crawl is for web sources given as an http(s):// URL"),
        ({"crawl_limits": {"depth": 2}}, "the crawl limits (depth) go with crawl on"),
        ({"max_file_mb": -1}, "max_file_mb must be a positive number, got -1"),
        ({"max_file_mb": True}, "max_file_mb must be a positive number, got True"),
        ({"colour": "red"}, "unknown source option(s) colour"),
    ],
)
def test_a_misused_option_is_refused_and_nothing_is_registered(lake, docs_dir, options, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        register_source(lake, str(docs_dir), "docs", options=options)
    assert not lake.has_table("sources") or lake.sources() == []


def test_crawl_limits_merge_into_a_crawl_and_are_checked(lake, monkeypatch):
    monkeypatch.setenv("KBFLOW_FETCH_ALLOW_HOSTS", "127.0.0.1:9")  # a loopback site, let through the fetch guard
    url = "http://127.0.0.1:9/book/"
    on = register_source(lake, url, "web", options={"crawl": True, "crawl_limits": {"depth": 2}})
    assert on.source.options == {"crawl": {"depth": 2}}
    more = register_source(lake, url, "web", options={"crawl_limits": {"max_pages": 10}})
    assert more.source.options == {"crawl": {"depth": 2, "max_pages": 10}}
    with pytest.raises(ConfigError, match="unknown crawl settings"):
        register_source(lake, url, "web", options={"crawl_limits": {"width": 3}})
    off = register_source(lake, url, "web", options={"crawl": False})
    assert off.source.options == {}


def test_a_path_is_stored_real_and_roots_are_enforced_through_links(lake, tmp_path, docs_dir):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(), outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n")
    os.symlink(outside, root / "link")
    with pytest.raises(AccessDeniedError, match="--source-root"):
        register_source(lake, str(root / "link"), "docs", roots=[str(root)])
    with pytest.raises(AccessDeniedError, match="none configured"):
        register_source(lake, str(docs_dir), "docs", roots=[])
    (root / "inside").mkdir()
    (root / "inside" / "guide.md").write_text("# Guide\n")
    added = register_source(lake, str(root / "inside" / ".." / "inside"), "docs", roots=[str(root)])
    assert added.source.uri == os.path.realpath(root / "inside")
    # the link itself registers on the command line (no roots), under the path it points at
    linked = register_source(lake, str(root / "link"), "docs")
    assert linked.source.uri == os.path.realpath(outside)
    with pytest.raises(SourceError, match="already registered"):
        register_source(lake, str(outside), "docs", source_id="other")


def test_cli_rest_and_status_show_one_shape_and_rest_keeps_a_cli_schedule(tmp_path, docs_dir):
    uri = str(tmp_path / "lake")
    runner = CliRunner()
    out = runner.invoke(
        main, ["--lake", uri, "add", str(docs_dir), "--type", "docs", "--refresh", "0 3 * * *", "--json"]
    )
    assert out.exit_code == 0, out.output
    added = json.loads(out.output)
    assert added["options"] == {"refresh": "0 3 * * *"} and added["will_be_left_out"] == []
    lake = Lake(uri)
    service = Service(lake, Settings.coerce(None, lake=uri, model=FAST_MODEL), source_roots=[str(tmp_path)])
    rest = service.add_source(None, {"uri": str(docs_dir), "type": "docs", "title": "Docs"})
    assert rest["options"] == {"refresh": "0 3 * * *"}, "re-adding over REST keeps the stored schedule"
    assert set(rest) == set(added) and rest["title"] == "Docs"
    status = json.loads(runner.invoke(main, ["--lake", uri, "status", "--json"]).output)
    listed = service.sources(None)
    assert set(status["sources"][0]) == set(listed[0]) == set(added) - {"will_be_left_out"}
    with pytest.raises(QueryError, match="crawl is for web sources"):  # 400 over REST, as every bad request
        service.add_source(None, {"uri": str(docs_dir), "type": "docs", "crawl": True})


def test_cli_keeps_option_misuse_a_usage_error(tmp_path, docs_dir):
    runner = CliRunner()
    out = runner.invoke(
        main, ["--lake", str(tmp_path / "lake"), "add", str(docs_dir), "--type", "docs", "--depth", "2"]
    )
    assert out.exit_code == 2 and "the crawl limits (depth) go with crawl on" in out.output
    out = runner.invoke(main, ["--lake", str(tmp_path / "lake"), "add", str(docs_dir), "--type", "docs", "--all-pages"])
    assert out.exit_code == 2 and "all_pages (true or false) is for web sources" in out.output


def test_a_path_or_id_that_is_not_utf8_is_refused_naming_it_and_nothing_is_registered(lake, tmp_path):
    """A folder named in Latin-1 bytes (Python lists it with a lone surrogate) or a source id holding half of
    a UTF-16 pair cannot be stored: refused with the name's bytes escaped, not a crash writing the registry."""
    folder = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.makedirs(folder)
    with open(os.path.join(folder, b"a.md"), "w") as fh:
        fh.write("# Cafe\n")
    with pytest.raises(SourceError, match=r"caf\\xe9: the path is not valid UTF-8"):
        register_source(lake, os.fsdecode(folder), "docs")
    good = tmp_path / "good"
    good.mkdir()
    (good / "a.md").write_text("# Good\n")
    with pytest.raises(SourceError, match=r"source id 'half\\ud83d': use letters, digits"):  # one pattern, ASCII
        register_source(lake, str(good), "docs", source_id="half\ud83d")
    assert not lake.has_table("sources") or lake.sources() == []
