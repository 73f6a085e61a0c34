import json
import os

import pytest

from kbflow.errors import SourceError
from kbflow.pipeline.registration import slugify
from kbflow.records import Source
from kbflow.sources.base import get_loader
from kbflow.sources.walk import walk_files


def load(kind, uri):
    loader = get_loader(kind)
    return loader, list(loader.load(Source("s", kind, str(uri))))


def test_docs_loader_units_and_fingerprint(docs_dir):
    loader, units = load("docs", docs_dir)
    assert [u.unit_key for u in units] == ["guide.md", "notes.txt"]
    assert units[0].language == "markdown" and units[0].content_kind == "doc"
    src = Source("s", "docs", str(docs_dir))
    before = loader.fingerprint(src)
    assert loader.fingerprint(src) == before
    (docs_dir / "notes.txt").write_text("changed\n")
    assert loader.fingerprint(src) != before


def test_docs_invalid_utf8_is_reported_and_the_rest_loaded(docs_dir):
    (docs_dir / "bad.md").write_bytes(b"# ok\n" + bytes(range(128, 256)))
    loader, units = load("docs", docs_dir)
    assert sorted(u.unit_key for u in units) == ["guide.md", "notes.txt"]
    (issue,) = loader.issues
    assert issue.path == "bad.md" and issue.failed
    assert issue.reason.startswith("not valid UTF-8 (byte 0x80 at offset 5) and no legacy encoding fits")


def test_docs_all_files_bad_fails_naming_them(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "bad.md").write_bytes(bytes(range(128, 256)))
    with pytest.raises(SourceError, match=r"nothing to index; the file was left out: bad\.md \(not valid UTF-8"):
        load("docs", d)


def test_docs_empty_folder_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="no Markdown/text files"):
        load("docs", tmp_path / "empty")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_names_the_file(docs_dir):
    p = docs_dir / "secret.md"
    p.write_text("x")
    p.chmod(0)
    with pytest.raises(SourceError, match="secret.md: permission denied"):
        load("docs", docs_dir)


def test_unreadable_path_names_the_file(docs_dir):
    # a file that vanishes between the walk and the read (works as root too)
    from kbflow.sources.files import read_bytes

    with pytest.raises(SourceError, match="gone.md: file not found"):
        read_bytes(str(docs_dir / "gone.md"))


def test_repo_walk_skips_vendored_ignored_binary_big_and_escaping_links(repo_dir, tmp_path):
    (repo_dir / ".git").mkdir()
    (repo_dir / ".git" / "config").write_text("x")
    (repo_dir / "node_modules" / "lib").mkdir(parents=True)
    (repo_dir / "node_modules" / "lib" / "i.js").write_text("x")
    (repo_dir / ".venv").mkdir()
    (repo_dir / ".venv" / "a.py").write_text("x")
    (repo_dir / ".gitignore").write_text("*.log\nbuildout/\n")
    (repo_dir / "debug.log").write_text("x")
    (repo_dir / "buildout").mkdir()
    (repo_dir / "buildout" / "gen.py").write_text("x = 1\n")
    (repo_dir / "pkg" / ".gitignore").write_text("local_*.py\n")
    (repo_dir / "pkg" / "local_cfg.py").write_text("x = 1\n")
    (repo_dir / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (repo_dir / "big.txt").write_text("x" * (1024 * 1024 + 1))
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n")
    os.symlink(outside, repo_dir / "escape.py")
    os.symlink(repo_dir / "pkg" / "fuse.py", repo_dir / "inside.py")
    files = [rel for rel, _ in walk_files(str(repo_dir))]
    assert files == sorted(files)
    assert set(files) == {
        ".gitignore",
        "README.md",
        "config.toml",
        "big.txt",
        "image.png",
        "inside.py",
        "pkg/.gitignore",
        "pkg/fuse.py",
    }
    loader, units = load("repo", repo_dir)
    keys = [u.unit_key for u in units]
    assert "image.png" not in keys and "big.txt" not in keys  # skipped and reported
    reasons = {i.path: i.reason for i in loader.issues}
    assert not any(i.failed for i in loader.issues)
    assert reasons["image.png"] == "binary file"
    assert reasons["big.txt"].startswith("1.0 MiB is over the 1.0 MiB limit of repo sources")
    assert reasons["escape.py"].startswith("symlink leaves the source root")
    assert reasons["node_modules/"].startswith("vendored") and reasons[".venv/"].startswith("vendored")
    assert reasons["debug.log"] == reasons["buildout/"] == reasons["pkg/local_cfg.py"] == "ignored by .gitignore"
    assert ".git/" not in reasons  # version-control metadata is never content: not reported
    kinds = {u.unit_key: (u.content_kind, u.language) for u in units}
    assert kinds["pkg/fuse.py"] == ("code", "python")
    assert kinds["README.md"] == ("doc", "markdown")
    assert kinds["config.toml"] == ("doc", "toml")


def test_jsonl_records(jsonl_file):
    _, units = load("jsonl", jsonl_file)
    assert [u.locator.record_id for u in units] == ["d1", "d2"]
    assert units[0].text.startswith("Bridges\n\nThe longest") and units[0].locator.field == "title+text"
    assert units[1].locator.field == "text"


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", r"corpus.jsonl:2: invalid JSON"),
        ('{"title": "x", "text": "y"}', r'corpus.jsonl:2: record has no "_id"'),
        ("[1, 2]", r"corpus.jsonl:2: expected a JSON object"),
    ],
)
def test_jsonl_bad_lines_name_file_and_line(tmp_path, line, message):
    """A bad line is reported as ``file:line`` and the other records load."""
    import re

    p = tmp_path / "corpus.jsonl"
    p.write_text(json.dumps({"_id": "d1", "text": "ok"}) + "\n" + line + "\n")
    loader, units = load("jsonl", p)
    assert [u.locator.record_id for u in units] == ["d1"]
    (issue,) = loader.issues
    assert issue.failed and re.match(message, f"{issue.path}: {issue.reason}")
    from kbflow.sources.jsonl import iter_records

    with pytest.raises(SourceError, match=message):  # without a problem callback, the first bad line raises
        list(iter_records(str(p)))


def test_jsonl_invalid_utf8_names_line_and_offset(tmp_path):
    p = tmp_path / "corpus.jsonl"
    p.write_bytes(b'{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": "caf\xe9"}\n')
    loader, units = load("jsonl", p)
    assert len(units) == 1
    assert str(loader.issues[0]) == (
        "corpus.jsonl:2 (not valid UTF-8 (byte 0xe9 at offset 54); convert the file to UTF-8)"
    )


def test_unknown_type_and_slug():
    with pytest.raises(SourceError, match="unknown source type 'pdfx'"):
        get_loader("pdfx")
    assert slugify("/x/My Docs/") == "my-docs"


def test_a_legacy_encoded_file_is_decoded_recorded_and_resolved_the_same_way(tmp_path, fast_settings):
    from kbflow import pipeline
    from kbflow import schema as S
    from kbflow.lake import Lake
    from kbflow.records import Citation
    from kbflow.retrieve.resolver import resolve

    d = tmp_path / "docs"
    d.mkdir()
    text = "# Menu\n\nCafé crème and œuvres at 5 € — « oui », every day.\n"
    (d / "menu.md").write_bytes(text.encode("cp1252"))
    (d / "plain.md").write_text("# Plain\n\nUTF-8 needs no record.\n")
    lake = Lake(tmp_path / "lake")
    lake.register(Source("docs", "docs", str(d)))
    pipeline.ingest(lake, fast_settings)
    assert lake.get_source("docs").status == "indexed"
    rows = {r[S.LOCATOR]["path"]: r for r in lake.scan(S.CHUNKS).to_pylist()}
    menu, plain = Citation.from_row(rows["menu.md"]), Citation.from_row(rows["plain.md"])
    assert rows["menu.md"][S.TEXT] == text.strip() and menu.locator.encoding == "cp1252"
    assert plain.locator.encoding is None and "encoding" not in plain.locator.to_dict()
    assert resolve(menu, lake=lake) == text.strip() == resolve(menu)  # re-read in the recorded encoding


def test_a_lake_inside_the_source_is_not_walked_so_a_second_ingest_changes_nothing(tmp_path, monkeypatch):
    """`kbflow add . --type repo` in a folder without a .gitignore: the default lake (./data/lake) sits inside
    it. Its own files (lease, version hints, Dagster's storage) are no content and change with every ingest."""
    from click.testing import CliRunner

    from kbflow.cli import main

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pump.py").write_text('def prime():\n    """Prime the pump."""\n    return 1\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KBFLOW_LAKE", raising=False)
    runner = CliRunner()
    assert runner.invoke(main, ["add", ".", "--type", "repo", "--id", "self"]).exit_code == 0
    skipped = []
    assert [rel for rel, _ in walk_files(str(tmp_path), on_skip=skipped.append)] == ["src/pump.py"]
    assert [(i.path, "a kbflow lake" in i.reason) for i in skipped] == [("data/lake/", True)]
    first = runner.invoke(main, ["ingest", "--model", "hash:64", "--json"])
    again = runner.invoke(main, ["ingest", "--model", "hash:64", "--json"])
    assert first.exit_code == 0 and again.exit_code == 0, (first.output, again.output)
    (report,) = json.loads(again.stdout)["sources"]
    assert report["status"] == "unchanged" and report["chunks_added"] == report["chunks_removed"] == 0


def test_minified_code_is_left_out_with_its_reason(tmp_path):
    """A vendored bundle is no code anyone reads, and its few giant chunks would match every query's words."""
    (tmp_path / "bundle.js").write_text("var a=" + "+".join(str(i) for i in range(3000)) + ";\n")
    (tmp_path / "jquery.min.js").write_text("function a(){return 1}\n")
    (tmp_path / "logo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><path d="M12 2C6.48 2 2 6.48"/></svg>')
    (tmp_path / "app.js").write_text('function prime() {\n  return "pump";\n}\n')
    (tmp_path / "data.json").write_text('{"a": [' + ",".join(str(i) for i in range(3000)) + "]}")  # data: cut at keys
    loader, units = load("repo", tmp_path)
    assert sorted(u.unit_key for u in units) == ["app.js", "data.json"]
    reasons = {i.path: i.reason for i in loader.issues}
    assert reasons == {
        "bundle.js": "minified or generated code (lines of 13,897 characters on average)",
        "jquery.min.js": "minified code (named *.min.*)",
        "logo.svg": "an image (SVG)",
    }
    assert not any(i.failed for i in loader.issues)


def test_a_data_file_is_read_as_its_header_and_first_rows(tmp_path):
    """Its rows are figures no query asks for; its header and first rows say what it holds, and cite exactly."""
    from kbflow.chunk.base import chunk_unit
    from kbflow.records import Citation
    from kbflow.retrieve.resolver import resolve
    from kbflow.sources.repo import DATA_PREVIEW_ROWS

    rows = "".join(f"{1969 + i // 365},{i % 12 + 1},{i % 28 + 1},F,{4000 + i}\n" for i in range(5000))
    (tmp_path / "births.csv").write_text("year,month,day,gender,births\n" + rows)
    wide = "\t".join(f"column_{i}" for i in range(60)) + "\n"
    (tmp_path / "wide.tsv").write_text(wide + "".join("\t".join(["123.456"] * 60) + "\n" for _ in range(40)))
    (tmp_path / "dump.csv").write_text(",".join(str(i) for i in range(3000)))  # one giant line: no table
    loader, units = load("repo", tmp_path)
    # a wide table is no minified code; one giant line is no table either
    assert {i.path: i.reason for i in loader.issues} == {
        "dump.csv": "a data file of rows of 13,889 characters on average"
    }
    by_key = {u.unit_key: u for u in units}
    births = by_key["births.csv"]
    assert births.text.startswith("year,month,day,gender,births\n1969,1,1,F,4000\n")
    assert births.text.count("\n") == DATA_PREVIEW_ROWS + 1 and births.locator.line_end == DATA_PREVIEW_ROWS + 1
    assert by_key["wide.tsv"].text.count("\n") == DATA_PREVIEW_ROWS + 1
    for unit in units:
        for c in chunk_unit(unit):
            assert resolve(Citation("s", "repo", str(tmp_path), c.locator)) == c.text


PAGE = """<!DOCTYPE html>
<html><head><title>Session - Alamofire</title></head>
<body><nav><a href="index.html">Home</a> <a href="Classes.html">Classes</a></nav>
<article><h1>Session</h1><p>Session creates and manages requests: it owns the URLSession and its delegate.</p>
<h2>Declaration</h2><p>open class Session: a wrapper that retries, adapts and validates each request.</p></article>
<footer>Generated by jazzy</footer></body></html>
"""


def test_a_whole_html_page_in_a_repository_is_read_as_its_text_and_resolves(tmp_path, monkeypatch):
    """Built documentation in a repository is read as a browser shows it, not as line windows of markup;
    a template fragment stays code; a page with no text is left out with its reason."""
    from kbflow.chunk.base import chunk_unit
    from kbflow.records import Citation
    from kbflow.retrieve import resolver
    from kbflow.sources import web

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "Session.html").write_text(PAGE)
    (tmp_path / "docs" / "Other.html").write_text(PAGE.replace("Session", "Request"))
    (tmp_path / "item.html").write_text('<li class="hit">{{ hit.text }}</li>\n')
    (tmp_path / "docs" / "index.html").write_text(PAGE)
    (tmp_path / "docs" / "search.json").write_text('{"Classes/Session.html": {"name": "Session"}}')
    (tmp_path / "search.json").write_text('{"name": "not beside a site"}')
    (tmp_path / "redirect.html").write_text(
        '<!doctype html><html><head><meta http-equiv="refresh" content="0; url=a.html">'
    )
    loader, units = load("repo", tmp_path)
    by_key = {u.unit_key: u for u in units}
    page = by_key["docs/Session.html"]
    assert page.content_kind == "web" and page.title == "Session - Alamofire"
    assert page.text.startswith("# Session\n\nSession creates and manages requests") and "<p>" not in page.text
    assert "Generated by jazzy" not in page.text and "Classes" not in page.text
    assert by_key["item.html"].content_kind == "code"
    assert {i.path: i.reason for i in loader.issues} == {
        "redirect.html": "a web page without article text (script, navigation or hidden)",
        "docs/search.json": "a documentation site's search index (generated: its pages are read)",
    }
    assert by_key["search.json"].content_kind == "doc"
    chunks = [c for u in units for c in chunk_unit(u)]
    citations = [Citation("s", "repo", str(tmp_path), c.locator) for c in chunks]
    parsed = []
    real = web.read_page
    monkeypatch.setattr(web, "read_page", lambda path, *a: parsed.append(path) or real(path, *a))
    assert resolver.resolve_many(citations) == [c.text for c in chunks]
    assert len(parsed) == len(set(parsed)) == 3  # each page parsed once, however many chunks cite it


def test_without_the_web_extra_a_page_in_a_repository_is_markup_and_says_why(tmp_path, monkeypatch, caplog):
    from kbflow.errors import MissingDependencyError
    from kbflow.sources import repo

    def missing(*args, **kwargs):
        raise MissingDependencyError("html5lib is missing: pip install 'kbflow[web]'")

    monkeypatch.setattr(repo, "page_unit", missing)
    repo._warn_once.cache_clear()
    (tmp_path / "Session.html").write_text(PAGE)
    with caplog.at_level("WARNING", logger="kbflow.sources.repo"):
        _, units = load("repo", tmp_path)
    assert [u.content_kind for u in units] == ["code"]
    assert "pip install 'kbflow[web]'; until then a repository's HTML pages are read as markup" in caplog.text
