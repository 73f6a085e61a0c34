"""Installs that fit the user: `pip install kbflow` searches a lake, each extra adds one kind of work, and every
public entry point whose extra is missing says which extra to install.

The entry points run in this process with the extra's packages made unimportable (``sys.modules[name] = None``,
undone after each test), except the last test, which runs the base CLI end to end in a subprocess.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, SAMPLES

from kbflow._lazy import EXTRAS, extra_for, install_hint

ROOT = REPO

#: kbflow's modules that may import an extra's packages at import time: the HTTP layer and the code location
_EXTRA_MODULES = {
    "serve": (
        "kbflow/service/app.py",
        "kbflow/service/http.py",
        "kbflow/service/api/",
        "kbflow/service/web/",
        "kbflow/service/mcp.py",
        "kbflow/service/security.py",
    ),
    "dagster": ("kbflow_dagster/",),
    "langchain": ("kbflow/integrations/langchain.py",),
    "llamaindex": ("kbflow/integrations/llama_index.py",),
    "haystack": ("kbflow/integrations/haystack.py",),
}


def _block(monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    """Make the packages of ``extra`` unimportable here, and forget the kbflow modules that import them at the
    top, so that the next import of either fails as it would without the extra."""
    tops = set(EXTRAS[extra][1]) | (
        {"tree_sitter", *(m for m in sys.modules if m.startswith("tree_sitter_"))} if extra == "code" else set()
    )
    owners = tuple(p.removesuffix(".py").replace("/", ".") for p in _EXTRA_MODULES.get(extra, ()))
    for name in list(sys.modules):
        if name.split(".")[0] in tops:
            monkeypatch.setitem(sys.modules, name, None)
        elif owners and name.startswith(owners):
            monkeypatch.delitem(sys.modules, name)
    for top in tops:
        monkeypatch.setitem(sys.modules, top, None)


def _cli(*args: str):
    from kbflow.cli import main

    return CliRunner().invoke(main, list(args))


def _says_install(text: str, extra: str) -> None:
    assert f"pip install 'kbflow[{extra}]'" in text, text


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_the_server_commands_name_the_serve_extra(monkeypatch, tmp_path, command):
    _block(monkeypatch, "serve")
    result = _cli("--lake", str(tmp_path / "lake"), command)
    assert result.exit_code != 0
    _says_install(result.output, "serve")
    assert "fastapi" in result.output or "mcp" in result.output


def test_the_dagster_runner_names_the_dagster_extra_and_auto_falls_back_to_local(monkeypatch, tmp_path, caplog):
    from kbflow.config import Settings
    from kbflow.errors import MissingDependencyError
    from kbflow.pipeline import run

    _block(monkeypatch, "dagster")
    with pytest.raises(MissingDependencyError) as caught:
        run.run_ingest(Settings(lake=str(tmp_path / "lake")), runner="dagster")
    _says_install(str(caught.value), "dagster")
    assert run._runner("auto") is run._local
    assert "ingesting with the local runner" in caplog.text and "kbflow[dagster]" in caplog.text


def test_eval_names_the_eval_extra_before_it_ingests_anything(monkeypatch, tmp_path):
    dataset = tmp_path / "tiny"
    (dataset / "qrels").mkdir(parents=True)
    (dataset / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "", "text": "lance tables"}) + "\n")
    (dataset / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "lance"}) + "\n")
    (dataset / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    _block(monkeypatch, "eval")
    result = _cli("eval", str(dataset), "--eval-lake", str(tmp_path / "lake"))
    assert result.exit_code != 0
    _says_install(result.output, "eval")
    assert not (tmp_path / "lake").exists()


@pytest.mark.parametrize(("extra", "kind", "sample"), [("pdf", "pdf", "pdf"), ("web", "web", "web")])
def test_a_source_whose_extra_is_missing_fails_alone_naming_it(monkeypatch, tmp_path, extra, kind, sample):
    lake = str(tmp_path / "lake")
    assert _cli("--lake", lake, "add", str(SAMPLES / sample), "--type", kind, "--id", "s").exit_code == 0
    _block(monkeypatch, extra)
    result = _cli("--lake", lake, "ingest", "--runner", "local")
    assert re.search(r"^s\s+failed", result.output, re.M), result.output
    _says_install(result.output, extra)


def test_the_page_picture_names_the_pdf_extra(monkeypatch, tmp_path):
    from kbflow.errors import MissingDependencyError
    from kbflow.records.render import page_png

    monkeypatch.setenv("KBFLOW_CACHE", str(tmp_path / "cache"))
    _block(monkeypatch, "pdf")
    with pytest.raises(MissingDependencyError) as caught:
        page_png(str(SAMPLES / "pdf" / "kbflow-guide.pdf"), 1)
    _says_install(str(caught.value), "pdf")


def test_code_without_its_grammars_is_chunked_by_lines_and_says_so(monkeypatch, caplog):
    from kbflow.chunk import grammars

    _block(monkeypatch, "code")
    grammars.grammar_installed.cache_clear()
    grammars.grammar_parser.cache_clear()
    try:
        assert not grammars.available("python")
        assert not grammars.available("python")
    finally:
        grammars.grammar_installed.cache_clear()
        grammars.grammar_parser.cache_clear()
    said = [r.getMessage() for r in caplog.records if "kbflow[code]" in r.getMessage()]
    assert len(said) == 1 and "python files are chunked by lines" in said[0], caplog.text


def test_the_ray_engine_names_the_ray_extra(monkeypatch, tmp_path):
    from kbflow.config import Settings
    from kbflow.errors import MissingDependencyError
    from kbflow.lake import Lake
    from kbflow.pipeline.engines import open_engine

    _block(monkeypatch, "ray")
    with pytest.raises(MissingDependencyError) as caught:
        open_engine(Settings(lake=str(tmp_path / "lake"), engine="ray"), Lake(str(tmp_path / "lake")))
    _says_install(str(caught.value), "ray")
    assert install_hint("ray.util").startswith("pip install 'kbflow[ray]'")


def test_every_extra_is_in_pyproject_and_none_of_its_packages_in_the_base_install():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    def names(requirements):
        return {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in requirements}

    base = names(project["dependencies"])
    for extra in EXTRAS:
        assert extra in extras, f"EXTRAS names {extra!r}, pyproject.toml has no such extra"
        assert not names(extras[extra]) & base, f"{extra}: {sorted(names(extras[extra]) & base)} also in the base"
    assert set(EXTRAS) - {"ray"} <= set(re.findall(r"\w+", extras["all"][0].partition("[")[2]))
    assert "kbflow" in names(extras["dev"])


def _top_level_imports(path: Path) -> set[str]:
    """The packages a module imports when it is imported (top-level statements, not TYPE_CHECKING blocks)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_an_extras_own_modules_import_its_packages_at_import_time():
    for path in sorted([*ROOT.glob("kbflow/**/*.py"), *ROOT.glob("kbflow_dagster/**/*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        for top in _top_level_imports(path):
            extra = extra_for(top)
            if extra is None or top.startswith("kbflow"):
                continue
            assert rel.startswith(_EXTRA_MODULES.get(extra, ())) and _EXTRA_MODULES.get(extra), (
                f"{rel} imports {top} (the {extra!r} extra) at import time: import it where it is used, "
                "with kbflow._lazy.require"
            )
