"""Nothing is dropped without a word: every file a loader leaves out or cannot read is reported, with its reason.

Each loader that walks folders (docs, repo, pdf, web, ticket) is fed a folder
holding one good file and one of each thing a walk leaves out; the report must
name each with its reason, and the good file must load. Size limits are per
source type, configurable per source, and apply to single files too.
"""

import importlib.util
import json
import os

import pytest
from conftest import FAST_MODEL, SAMPLES

from kbflow import pipeline
from kbflow import schema as S
from kbflow.errors import SourceError
from kbflow.lake import Lake
from kbflow.records import Source
from kbflow.sources.base import get_loader

_spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
make_pdf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdf)

TICKET = json.dumps({"number": 1, "title": "A ticket", "body": "Some words about rivers."})
HTML = (
    "<html><body><article><h1>Rivers</h1><p>" + "Rivers carry water to the sea. " * 10 + "</p></article></body></html>"
)
GOOD = {
    "docs": ("good.md", b"# Good\n\nRivers carry water.\n"),
    "repo": ("good.py", b"def rivers():\n    return 'water'\n"),
    "pdf": ("good.pdf", make_pdf.build()),
    "web": ("good.html", HTML.encode()),
    "ticket": ("good.json", TICKET.encode()),
}
OTHER_TYPE = {"docs": "image.png", "pdf": "notes.txt", "web": "notes.txt", "ticket": "notes.txt"}


def _big(kind: str) -> tuple[str, bytes]:
    """A valid file of the kind, just over 1 MiB."""
    name, data = GOOD[kind]
    if kind == "pdf":
        return "big.pdf", make_pdf.build(padding=1024 * 1024)
    if kind == "ticket":
        return "big.json", json.dumps({"number": 2, "title": "Big", "body": "x " * 600_000}).encode()
    pad = b"\n" + b"x = 1\n" * 200_000 if kind == "repo" else b"\n" + b"word " * 220_000
    return "big" + os.path.splitext(name)[1], data + pad


@pytest.mark.parametrize("kind", ["docs", "repo", "pdf", "web", "ticket"])
def test_every_skip_reason_is_reported_and_the_good_file_loads(tmp_path, kind):
    root = tmp_path / kind
    root.mkdir()
    name, data = GOOD[kind]
    (root / name).write_bytes(data)
    big_name, big = _big(kind)
    (root / big_name).write_bytes(big)
    if kind in OTHER_TYPE:
        (root / OTHER_TYPE[kind]).write_bytes(b"\x89PNG" if kind == "docs" else b"plain notes")
    (root / "node_modules").mkdir()
    (root / "node_modules" / name).write_bytes(data)
    (root / ".gitignore").write_text("ignored_*\n")
    (root / ("ignored_" + name)).write_bytes(data)
    outside = tmp_path / ("outside_" + name)
    outside.write_bytes(data)
    os.symlink(outside, root / ("link_" + name))
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "package-lock.json").write_text('{"lockfileVersion": 3, "packages": {}}')

    loader = get_loader(kind)
    source = Source("s", kind, str(root), options={"max_file_mb": 1})
    units = list(loader.load(source))
    assert units and all(u.unit_key.startswith(name) or u.unit_key == ".gitignore" for u in units)
    reasons = {i.path: i.reason for i in loader.issues}
    assert " MiB is over the 1.0 MiB limit of " + kind + " sources; raise it with" in reasons.pop(big_name)
    assert reasons.pop("node_modules/") == "vendored, virtualenv or build folder (not walked)"
    assert reasons.pop("ignored_" + name) == "ignored by .gitignore"
    assert reasons.pop("link_" + name) == "symlink leaves the source root (not followed)"
    assert reasons.pop("package-lock.json") == "a package manager's lock file (generated)"
    if kind in OTHER_TYPE:
        assert reasons.pop(OTHER_TYPE[kind]).startswith("not a")
    if kind != "repo":
        assert reasons.pop(".gitignore").startswith("not a")  # not a file of this type
    assert reasons == {}  # nothing else, and .git is never content
    assert not any(i.failed for i in loader.issues)
    # raising the limit (re-adding with --max-file-mb) takes the big file in, and changes the fingerprint
    before = loader.fingerprint(source)
    raised = Source("s", kind, str(root), options={"max_file_mb": 4})
    assert loader.fingerprint(raised) != before
    assert big_name in {u.unit_key.split("#")[0] for u in loader.load(raised)}


def test_default_limits_per_type_fit_the_documents_people_have():
    limits = {kind: get_loader(kind).max_file_mb for kind in ("repo", "docs", "web", "ticket", "pdf", "jsonl")}
    assert limits["repo"] == 1 and limits["docs"] <= 4  # code and text: small
    assert limits["pdf"] >= 256  # long filings, manuals and scans are hundreds of MB
    assert limits["web"] >= 16 and limits["ticket"] >= 16
    assert limits["jsonl"] is None  # record sets stream a line at a time


def test_a_single_file_over_its_limit_is_refused_at_add_and_takes_an_override(tmp_path):
    big = tmp_path / "huge.txt"
    big.write_bytes(b"word " * (1024 * 1024))  # 5 MiB of text
    with pytest.raises(SourceError, match=r"huge\.txt \(5\.0 MiB is over the 4\.0 MiB limit of docs sources; raise it"):
        get_loader("docs").check(str(big))
    get_loader("docs").check(str(big), {"max_file_mb": 6})  # the explicit override


def test_a_source_whose_files_were_all_left_out_fails_with_that_reason(tmp_path, fast_settings, lake_path):
    d = tmp_path / "papers"
    d.mkdir()
    (d / "a.pdf").write_bytes(make_pdf.build())
    (d / "b.pdf").write_bytes(make_pdf.build())
    lake = Lake(lake_path)
    lake.register(Source("papers", "pdf", str(d)))
    assert [r.status for r in pipeline.ingest(lake, fast_settings).sources] == ["new"]
    lake.register(Source("papers", "pdf", str(d), options={"max_file_mb": 0.0001}))  # re-added, tiny limit
    (report,) = pipeline.ingest(lake, fast_settings).sources
    assert report.status == "failed"
    assert "nothing to index; all 2 files were left out: a.pdf (" in report.error
    assert [s["path"] for s in report.skipped] == ["a.pdf", "b.pdf"] and report.failed_files == []
    source = lake.get_source("papers")
    assert source.status == "failed" and len(source.skipped) == 2
    # what the lake held before stays searchable
    assert lake.scan(S.SEARCH, [S.CHUNK_ID], "source_id = 'papers'").num_rows > 0


def test_a_folder_of_pdfs_over_1_mib_is_ingested(tmp_path, fast_settings, lake_path):
    """Round one's bug: a folder of real-size PDFs lost every file over the 1 MiB code limit, without a word."""
    d = tmp_path / "filings"
    d.mkdir()
    for i in range(3):
        (d / f"filing-{i}.pdf").write_bytes(make_pdf.build(padding=2 * 1024 * 1024))
    lake = Lake(lake_path)
    lake.register(Source("filings", "pdf", str(d)))
    (report,) = pipeline.ingest(lake, fast_settings).sources
    assert report.status == "new" and report.skipped == [] and report.failed_files == []
    files = {r[S.LOCATOR]["path"] for r in lake.scan(S.CHUNKS, [S.LOCATOR]).to_pylist()}
    assert files == {"filing-0.pdf", "filing-1.pdf", "filing-2.pdf"}


def test_skipped_files_show_in_the_ingest_summary_status_and_dagster_metadata(tmp_path, lake_path):
    from click.testing import CliRunner

    from kbflow.cli import main

    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.md").write_text("# A\n\nRivers.\n")
    (d / "big.md").write_bytes(b"word " * 300_000)
    (d / "photo.jpg").write_bytes(b"\xff\xd8")
    runner = CliRunner()
    out = runner.invoke(main, ["--lake", lake_path, "add", str(d), "--type", "docs", "--max-file-mb", "1"])
    assert out.exit_code == 0 and "will be left out: big.md (1.4 MiB is over the 1.0 MiB limit" in out.output
    out = runner.invoke(main, ["--lake", lake_path, "ingest", "--model", FAST_MODEL, "--json"])
    assert out.exit_code == 0, out.output  # files left out by a rule do not fail the ingest
    (report,) = json.loads(out.stdout)["sources"]
    assert report["status"] == "new"
    assert [s["path"] for s in report["skipped"]] == ["big.md", "photo.jpg"]
    status = json.loads(runner.invoke(main, ["--lake", lake_path, "status", "--json"]).stdout)
    assert [s["path"] for s in status["sources"][0]["skipped"]] == ["big.md", "photo.jpg"]
    assert "2 files left out" in runner.invoke(main, ["--lake", lake_path, "status"]).output
    # an unchanged source still reports what its last load left out
    again = json.loads(runner.invoke(main, ["--lake", lake_path, "ingest", "--model", FAST_MODEL, "--json"]).stdout)
    assert again["sources"][0]["status"] == "unchanged" and len(again["sources"][0]["skipped"]) == 2
    # the documents materialization carries the list
    import shutil

    import dagster as dg

    from kbflow_dagster.corpus import documents
    from kbflow_dagster.resources import KbflowResource

    shutil.copytree(d, tmp_path / "copy")
    lake = Lake(lake_path)
    lake.register(Source("other", "docs", str(tmp_path / "copy"), options={"max_file_mb": 1}))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["other"])
        result = dg.materialize(
            [documents],
            partition_key="other",
            instance=instance,
            resources={"kbflow": KbflowResource(lake=lake_path, model=FAST_MODEL)},
        )
    meta = result.asset_materializations_for_node("documents")[0].metadata
    assert meta["files_left_out"].value == 2 and meta["files_unreadable"].value == 0
    assert [r.data["path"] for r in meta["issues"].value.records] == ["big.md", "photo.jpg"]


def test_an_unexpected_error_reading_one_file_fails_that_file_alone(tmp_path, monkeypatch):
    """Any error a loader did not foresee (not only SourceError) fails its own file, with the error's type and
    message; the source's other files load."""
    from kbflow.records import Source
    from kbflow.sources.base import get_loader
    from kbflow.sources.docs import DocsLoader

    (tmp_path / "good.md").write_text("# Good\n\nValves are greased in spring.\n")
    (tmp_path / "odd.md").write_text("# Odd\n\nThis one trips an unforeseen bug.\n")
    real = DocsLoader.load_file

    def load_file(self, source, rel, path):
        if rel == "odd.md":
            raise RecursionError("maximum recursion depth exceeded")
        return real(self, source, rel, path)

    monkeypatch.setattr(DocsLoader, "load_file", load_file)
    loader = get_loader("docs")
    units = list(loader.load(Source("d", "docs", str(tmp_path))))
    assert [u.unit_key for u in units] == ["good.md"]
    (issue,) = loader.issues
    assert issue.path == "odd.md" and issue.failed
    assert issue.reason == "could not be read (RecursionError: maximum recursion depth exceeded)"


def test_a_file_another_source_type_reads_says_which(tmp_path):
    (tmp_path / "notes.md").write_text("# Notes\n\nRivers.\n")
    (tmp_path / "report.pdf").write_bytes(make_pdf.build())
    (tmp_path / "page.html").write_text(HTML)
    docs = get_loader("docs")
    list(docs.load(Source("s", "docs", str(tmp_path))))
    reasons = {i.path: i.reason for i in docs.issues}
    assert reasons["report.pdf"].endswith("; a pdf source reads it (kbflow add PATH --type pdf)")
    assert reasons["page.html"].endswith("; a web source reads it (kbflow add PATH --type web)")
    repo = get_loader("repo")
    list(repo.load(Source("s", "repo", str(tmp_path))))
    assert {i.path: i.reason for i in repo.issues} == {
        "report.pdf": "a PDF; a pdf source reads it (kbflow add PATH --type pdf)"
    }
    with pytest.raises(SourceError, match=r"not a PDF.*; a docs source reads it \(kbflow add PATH --type docs\)"):
        get_loader("pdf").check(str(tmp_path / "notes.md"))
