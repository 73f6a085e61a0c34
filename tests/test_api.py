import subprocess
import sys

import pytest

import kbflow
from kbflow.config import ChunkSettings, RetrievalSettings, Settings
from kbflow.errors import ConfigError, KbflowError, QueryError, SourceError, SourceNotFoundError


def test_import_is_cheap():
    code = (
        "import sys, kbflow; heavy = [m for m in ('torch', 'lancedb', 'lance', 'dagster', 'tree_sitter', "
        "'sentence_transformers', 'pdfplumber', 'pyarrow') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_all_names_resolve():
    for name in kbflow.__all__:
        assert getattr(kbflow, name) is not None
    with pytest.raises(AttributeError):
        kbflow.nope  # noqa: B018


def test_error_tree_inherits_builtins():
    assert issubclass(SourceError, ValueError) and issubclass(SourceError, KbflowError)
    assert issubclass(QueryError, ValueError)
    assert issubclass(SourceNotFoundError, KeyError)
    assert str(SourceNotFoundError("no source 'x'")) == "no source 'x'"


def test_settings_validate_and_coerce(tmp_path):
    with pytest.raises(ConfigError):
        ChunkSettings(max_tokens=4)
    with pytest.raises(ConfigError):
        RetrievalSettings(depth_factor=2)
    with pytest.raises(ConfigError):
        RetrievalSettings(mode="fuzzy")
    s = Settings.coerce({"model": "hash:8", "chunking": {"max_tokens": 100}}, lake=str(tmp_path / "l"))
    assert s.model == "hash:8" and s.chunking.max_tokens == 100 and s.lake == str(tmp_path / "l")
    with pytest.raises(ConfigError, match="unknown settings"):
        Settings.coerce({"modle": "x"})
    assert RetrievalSettings().depth(10) == 30 and RetrievalSettings().depth(20) == 60


def test_lake_default_from_env(monkeypatch, tmp_path):
    from kbflow.config import resolve_lake

    monkeypatch.setenv("KBFLOW_LAKE", str(tmp_path / "x"))
    assert resolve_lake() == str(tmp_path / "x")
    monkeypatch.delenv("KBFLOW_LAKE")
    monkeypatch.chdir(tmp_path)
    assert resolve_lake() == str(tmp_path / "data" / "lake")
    assert resolve_lake("s3://bucket/lake") == "s3://bucket/lake"
