"""The source registry (kbflow.lake.lake.Lake): register, update and read sources."""

import pytest

from kbflow.errors import SourceConflictError, SourceError, SourceNotFoundError
from kbflow.lake.lake import Lake
from kbflow.records import Source


def test_register_adds_then_updates_scope_and_title_only(tmp_path):
    lake = Lake(tmp_path / "lake")
    first = lake.register(Source("docs", "docs", "/srv/docs", title="Docs"))
    assert first.added_at is not None and first.scope == "global"
    again = lake.register(Source("docs", "docs", "/srv/docs", scope=" acme ", title=None))
    assert again.scope == "acme" and again.title == "Docs" and again.added_at == first.added_at
    assert [s.source_id for s in lake.sources()] == ["docs"]


def test_an_id_or_uri_held_by_another_source_is_refused(tmp_path):
    lake = Lake(tmp_path / "lake")
    lake.register(Source("docs", "docs", "/srv/docs"))
    with pytest.raises(SourceConflictError, match="already registered for docs /srv/docs"):
        lake.register(Source("docs", "docs", "/srv/other"))
    with pytest.raises(SourceConflictError, match="already registered as source 'docs'"):
        lake.register(Source("docs2", "docs", "/srv/docs"))
    with pytest.raises(SourceError, match="not valid UTF-8"):
        lake.register(Source("bad", "docs", "/srv/\udcff"))
    assert [s.uri for s in lake.sources()] == ["/srv/docs"]


def test_status_changes_fields_and_an_unknown_id_names_the_known(tmp_path):
    lake = Lake(tmp_path / "lake")
    lake.register(Source("a", "docs", "/srv/a"))
    lake.register(Source("b", "docs", "/srv/b"))
    lake.set_status({"b": {"title": "Bee"}})
    assert lake.get_source("b").title == "Bee" and lake.get_source("a").title is None
    with pytest.raises(SourceNotFoundError, match=r"registered: a, b"):
        lake.get_source("c")
