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
    assert RetrievalSettings().depth(10) == 301 and RetrievalSettings().depth(400) == 1200


def test_lake_default_from_env(monkeypatch, tmp_path):
    from kbflow.config import resolve_lake

    monkeypatch.setenv("KBFLOW_LAKE", str(tmp_path / "x"))
    assert resolve_lake() == str(tmp_path / "x")
    monkeypatch.delenv("KBFLOW_LAKE")
    monkeypatch.chdir(tmp_path)
    assert resolve_lake() == str(tmp_path / "data" / "lake")
    assert resolve_lake("s3://bucket/lake") == "s3://bucket/lake"


def test_all_is_written_out_and_matches_the_exports():
    import ast

    tree = ast.parse(open(kbflow.__file__).read())
    literal = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    )
    assert isinstance(literal, ast.List)  # a literal list: readers and tools see the public API
    assert [elt.value for elt in literal.elts] == sorted(kbflow._EXPORTS)


def test_the_library_never_imports_dagster(tmp_path):
    """A whole local ingest, search and resolve without Dagster in sys.modules; no kbflow module names it."""
    import pathlib

    root = pathlib.Path(kbflow.__file__).parent
    for path in root.rglob("*.py"):
        source = path.read_text()
        assert "import dagster" not in source and "from dagster" not in source, path
        assert "kbflow_dagster" not in source.replace("``kbflow_dagster``", ""), path
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nRanks are fused here.\n")
    code = (
        "import sys; from kbflow import Lake, Source, Retriever, run_ingest, Settings\n"
        f"lake = Lake({str(tmp_path / 'lake')!r}); lake.register(Source('d', 'docs', {str(docs)!r}))\n"
        "s = run_ingest(Settings.coerce(None, lake=lake.uri, model='hash:32'), runner='local')\n"
        "assert s.ok, s; assert Retriever.open(lake).search('fused', k=1)\n"
        "print([m for m in sys.modules if m.split('.')[0] in ('dagster', 'kbflow_dagster')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_help_loads_no_heavy_module():
    code = (
        "import sys; from click.testing import CliRunner; from kbflow.cli import main\n"
        "CliRunner().invoke(main, ['--help']); CliRunner().invoke(main, ['eval', '--help'])\n"
        "print([m for m in ('numpy', 'pyarrow', 'lancedb', 'torch', 'dagster') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_one_registry_refuses_a_second_class_under_a_taken_name():
    from kbflow.chunk.base import CHUNKERS
    from kbflow.config.registry import Registry
    from kbflow.embed.base import EMBEDDERS
    from kbflow.retrieve.rerank import RERANKERS
    from kbflow.sources.base import LOADERS

    assert LOADERS.names() == ["docs", "jsonl", "pdf", "repo", "ticket", "web"]
    assert {"code", "document", "lines", "structured"} <= set(CHUNKERS.names())
    assert {"hash", "st"} <= set(EMBEDDERS.names()) and "cross-encoder" in RERANKERS.names()
    reg: Registry[object] = Registry("widget")

    @reg.register("a")
    class A:
        pass

    assert reg.register("a")(A) is A  # the same class again is fine
    with pytest.raises(ConfigError, match="a widget named 'a' is already registered"):
        reg.register("a")(type("B", (), {}))
    with pytest.raises(ConfigError, match="unknown widget 'b'; known: a"):
        reg.get("b")
    with pytest.raises(SourceError, match="unknown source type 'ftp'"):
        kbflow.get_loader("ftp")


def test_runners_report_alike(tmp_path):
    """The local and the Dagster runner give the same summary for the same lake changes."""
    from kbflow import Lake, Settings, Source, run_ingest

    out = {}
    for runner in ("local", "dagster"):
        docs = tmp_path / runner / "docs"
        docs.mkdir(parents=True)
        (docs / "a.md").write_text("# A\n\nRanks are fused here.\n")
        (docs / "b.md").write_text("# B\n\nBridges.\n")
        lake = Lake(str(tmp_path / runner / "lake"))
        lake.register(Source("d", "docs", str(docs)))
        lake.register(Source("gone", "docs", str(tmp_path / runner / "missing")))
        settings = Settings.coerce(None, lake=lake.uri, model="hash:32")
        summary = run_ingest(settings, runner=runner)
        out[runner] = [
            {k: v for k, v in s.to_dict().items() if k != "error"} | {"error": (s.error or "").replace(runner, "R")}
            for s in summary.sources
        ]
        assert sorted(c["name"] for c in summary.checks) == [
            "embeddings_cover_chunks",
            "indexes_cover_rows",
            "keys_unique",
            "locators_resolve",
            "search_matches_chunks",
        ]
        assert summary.index.rows == 2 and summary.index_error is None
    assert out["local"] == out["dagster"]
    assert out["local"][1]["status"] == "failed" and "no such file or folder" in out["local"][1]["error"]
