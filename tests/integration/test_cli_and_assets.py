"""The CLI and the Dagster definitions, with the fast hashing embedder (real Lance, real Dagster)."""

import json
import os

import dagster as dg
import pytest
from click.testing import CliRunner
from conftest import CITATION_KEYS, FAST_MODEL, HIT_KEYS

from kbflow.cli import main
from kbflow.records.prompt import parse_blocks
from kbflow_dagster.corpus import search_index


def run(lake, *args):
    result = CliRunner().invoke(main, ["--lake", lake, *args], catch_exceptions=False)
    return result


def test_definitions_load_and_graph():
    from kbflow_dagster.definitions import defs

    keys = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {
        "source_files", "documents", "chunks", "embeddings", "search_index", "claims_evidence", "insights",
        "eval_lake", "eval_run", "eval_summary",
    }  # fmt: skip
    checks = {key.name for key in defs.resolve_asset_graph().asset_check_keys}
    assert {"claims_evidence_fresh", "claims_contradictions_resolved", "keys_unique", "locators_resolve"} <= checks
    assert len(checks) == 7


def test_cli_add_ingest_search_status_resolve(lake_path, docs_dir, repo_dir, jsonl_file):
    assert run(lake_path, "add", str(docs_dir), "--type", "docs", "--scope", "proj").exit_code == 0
    assert run(lake_path, "add", str(repo_dir), "--type", "repo", "--id", "self", "--scope", "proj").exit_code == 0
    assert run(lake_path, "add", str(jsonl_file), "--type", "jsonl").exit_code == 0

    out = run(lake_path, "ingest", "--model", FAST_MODEL, "--json")
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert {s["source_id"]: s["status"] for s in summary["sources"]} == {"docs": "new", "self": "new", "corpus": "new"}
    assert set(summary["versions"]) == {"sources", "documents", "chunks", "embeddings", "search"}
    assert all(c["passed"] for c in summary["checks"]) and len(summary["checks"]) == 5
    assert set(summary["sources"][0]) == {
        "source_id",
        "status",
        "chunks_added",
        "chunks_removed",
        "chunks_embedded",
        "error",
        "skipped",
        "failed_files",
    }

    again = json.loads(run(lake_path, "ingest", "--model", FAST_MODEL, "--json").stdout)
    assert {s["status"] for s in again["sources"]} == {"unchanged"}

    out = run(lake_path, "search", "reciprocal rank fusion", "-k", "3", "--json")
    assert out.exit_code == 0, out.output
    hits = [json.loads(line) for line in out.stdout.splitlines()]
    assert [h["rank"] for h in hits] == [1, 2, 3]
    for h in hits:
        assert set(h) == HIT_KEYS
        assert set(h["citation"]) == CITATION_KEYS
        assert h["citation"]["locator"]["kind"] in ("doc", "code", "record")

    text = run(lake_path, "resolve", hits[0]["chunk_id"])
    assert text.exit_code == 0 and text.stdout == hits[0]["text"]

    human = run(lake_path, "search", "bridge span", "-k", "2")
    assert human.exit_code == 0 and "1." in human.output
    off = run(lake_path, "search", "bridge span", "-k", "2", "--feedback", "0")
    assert off.exit_code == 0 and "1." in off.output
    bad = run(lake_path, "search", "bridge span", "--feedback", "-1")
    assert bad.exit_code == 2 and "--feedback" in bad.output

    prompt = run(lake_path, "search", "reciprocal rank fusion", "-k", "3", "--prompt")
    assert prompt.exit_code == 0
    blocks = parse_blocks(prompt.stdout)
    assert [b["chunk_id"] for b in blocks] == [h["chunk_id"] for h in hits]
    assert hits[0]["text"] in prompt.stdout

    status = run(lake_path, "status", "--json")
    data = json.loads(status.stdout)
    assert {s["source_id"]: s["status"] for s in data["sources"]} == {
        "docs": "indexed",
        "self": "indexed",
        "corpus": "indexed",
    }


def test_cli_errors_are_one_clear_line(lake_path, tmp_path):
    out = run(lake_path, "add", str(tmp_path / "missing"), "--type", "docs")
    assert out.exit_code == 1 and "missing: no such file or folder" in out.output and "Traceback" not in out.output
    out = run(lake_path, "add", str(tmp_path), "--type", "pdfx")
    assert out.exit_code == 1 and "unknown source type 'pdfx'" in out.output
    out = run(str(tmp_path / "nolake"), "search", "x")
    assert out.exit_code == 1 and "no lake here" in out.output
    afile = tmp_path / "afile"
    afile.write_text("x")
    out = run(str(afile), "status")
    assert out.exit_code == 1 and "is a file, not a lake folder" in out.output
    out = run(lake_path, "ingest", "--backend", "tensorrt")
    assert out.exit_code == 2 and "'tensorrt' is not one of 'auto', 'torch', 'onnx', 'bf16', 'onnx-int8'" in out.output


def test_cli_ingest_reports_partial_and_failed_sources_and_exits_1(lake_path, docs_dir, tmp_path):
    run(lake_path, "add", str(docs_dir), "--type", "docs")
    bad_only = tmp_path / "bad_only"
    bad_only.mkdir()
    (bad_only / "x.md").write_text("# fine at add time\n")
    run(lake_path, "add", str(bad_only), "--type", "docs")
    (docs_dir / "bad.md").write_bytes(bytes(range(128, 256)))
    (bad_only / "x.md").write_bytes(bytes(range(128, 256)))
    out = run(lake_path, "ingest", "--model", FAST_MODEL, "--json")
    assert out.exit_code == 1
    summary = {s["source_id"]: s for s in json.loads(out.stdout)["sources"]}
    docs = summary["docs"]
    assert docs["status"] == "partial" and docs["chunks_added"] > 0 and docs["skipped"] == []
    assert docs["failed_files"] == [{"path": "bad.md", "reason": docs["failed_files"][0]["reason"]}]
    assert docs["failed_files"][0]["reason"].startswith("not valid UTF-8 (byte 0x80 at offset 0)")
    assert summary["bad_only"]["status"] == "failed"
    assert "nothing to index; the file was left out: x.md (not valid UTF-8" in summary["bad_only"]["error"]
    status = json.loads(run(lake_path, "status", "--json").stdout)
    rows = {s["source_id"]: s for s in status["sources"]}
    assert rows["docs"]["status"] == "partial" and rows["docs"]["failed_files"] == docs["failed_files"]
    assert rows["bad_only"]["status"] == "failed" and rows["bad_only"]["failed_files"][0]["path"] == "x.md"
    human = run(lake_path, "status").output
    assert "1 could not be read" in human and "unreadable: bad.md (not valid UTF-8" in human


def test_partition_sync_requests():
    from kbflow_dagster.sensors import partition_requests

    requests = partition_requests({"a", "b"}, {"b", "c"})
    assert isinstance(requests[0], dg.AddDynamicPartitionsRequest) and list(requests[0].partition_keys) == ["a"]
    assert isinstance(requests[1], dg.DeleteDynamicPartitionsRequest) and list(requests[1].partition_keys) == ["c"]


def test_stale_sensor_runs_by_default_and_requests_each_change_once(ingested, docs_dir):
    from kbflow_dagster.definitions import defs
    from kbflow_dagster.resources import KbflowResource
    from kbflow_dagster.sensors import refresh_stale_sources

    sensor = defs.resolve_sensor_def("refresh_stale_sources")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    (docs_dir / "guide.md").write_text("# Guide\n\nRewritten.\n")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["docs", "repo", "recs"])
        context = dg.build_sensor_context(
            instance=instance, resources={"kbflow": KbflowResource(lake=ingested.uri, model=FAST_MODEL)}
        )
        first = refresh_stale_sources(context).run_requests
        again = refresh_stale_sources(context).run_requests
        (docs_dir / "guide.md").write_text("# Guide\n\nRewritten twice.\n")
        changed = refresh_stale_sources(context).run_requests
    assert [r.partition_key for r in first] == ["docs"]
    assert [r.run_key for r in again] == [r.run_key for r in first]  # the same change: the same key, one run
    assert changed[0].run_key != first[0].run_key  # a new change: a new run


def test_help_lists_commands():
    out = CliRunner().invoke(main, ["--help"])
    for command in ("add", "ingest", "search", "status", "resolve", "remove", "tag", "versions", "gc", "serve", "mcp",
                    "insights", "keys", "claims"):  # fmt: skip
        assert command in out.output


def test_lake_option_after_the_subcommand(tmp_path, docs_dir):
    lake = str(tmp_path / "after")
    out = CliRunner().invoke(main, ["add", str(docs_dir), "--type", "docs", "--lake", lake])
    assert out.exit_code == 0, out.output
    assert f"lake: {lake}" in out.output
    status = CliRunner().invoke(main, ["status", "--json", "--lake", lake])
    assert json.loads(status.stdout)["lake"] == lake


def test_insights_asset_materializes_the_report(ingested):
    from kbflow import Retriever, usage
    from kbflow_dagster.resources import KbflowResource
    from kbflow_dagster.usage import insights

    Retriever.open(ingested).search("fusion", k=2)
    usage.flush()
    result = dg.materialize(
        [insights],
        resources={"kbflow": KbflowResource(lake=ingested.uri, model=FAST_MODEL)},
        run_config={"ops": {"insights": {"config": {"since": "1h"}}}},
    )
    assert result.success
    metadata = result.asset_materializations_for_node("insights")[0].metadata
    assert metadata["queries"].value == 1 and "Top queries" in metadata["report"].value


def test_a_dagster_ingest_flags_exactly_the_claim_whose_cited_line_changed(ingested, docs_dir):
    from kbflow import Claims, Evidence, Retriever
    from kbflow.config import Settings
    from kbflow.pipeline import run_ingest
    from kbflow_dagster.claims import claims_contradictions_resolved, claims_evidence, claims_evidence_fresh
    from kbflow_dagster.resources import KbflowResource

    hits = Retriever.open(ingested).search("reciprocal rank fusion dense keyword legs", k=20)
    guide = next(h for h in hits if h.citation.locator.path == "guide.md" and "Ranks from" in h.text)
    notes = next(h for h in Retriever.open(ingested).search("bridges rivers", k=20) if "notes" in h.citation.render())
    claims = Claims.open(ingested, settings={"model": FAST_MODEL})
    flagged = claims.learn("The legs are fused by RRF", [Evidence.from_hit(guide)])
    kept = claims.learn("The notes are about bridges", [Evidence.from_hit(notes)])
    (docs_dir / "guide.md").write_text((docs_dir / "guide.md").read_text().replace("Ranks from", "Scores from"))
    settings = Settings.coerce(None, lake=ingested.uri, model=FAST_MODEL)
    summary = run_ingest(settings, runner="dagster")
    assert summary.ok and summary.claims["stale"] == [flagged] and summary.claims["newly_stale"] == [flagged]
    reopened = Claims.open(ingested, settings={"model": FAST_MODEL})
    assert reopened.get(flagged).evidence_stale and not reopened.get(kept).evidence_stale
    stale = reopened.get(flagged).stale[0]
    assert "Ranks from" in stale.old_text and "Scores from" in (stale.new_text or "")
    # a contradiction a person confirmed, and neither claim superseded nor disputed: unresolved
    rival = reopened.learn("The legs are fused by a weighted sum", [Evidence.url("https://example.com/fusion")])
    rid = reopened.relate(flagged, "contradicts", rival, by="user:ana")
    reopened.confirm_relation(rid, by="user:ana")
    # the asset on its own, with its checks: warnings naming the claims, not failures
    result = dg.materialize(
        [claims_evidence, claims_evidence_fresh, claims_contradictions_resolved],
        resources={"kbflow": KbflowResource(lake=ingested.uri, model=FAST_MODEL)},
    )
    assert result.success
    meta = result.asset_materializations_for_node("claims_evidence")[0].metadata
    assert meta["stale_claims"].value == 1 and flagged in meta["summary"].value
    evaluations = sorted(result.get_asset_check_evaluations(), key=lambda e: e.check_name)
    assert [(e.check_name, e.passed, e.severity) for e in evaluations] == [
        ("claims_contradictions_resolved", False, dg.AssetCheckSeverity.WARN),
        ("claims_evidence_fresh", False, dg.AssetCheckSeverity.WARN),
    ]
    assert evaluations[1].metadata["claim_ids"].value == [flagged]
    assert evaluations[0].metadata["pairs"].value == [{"relation": rid, "a": flagged, "b": rival}]
    # resolved: one of the two superseded; the check passes
    reopened.supersede(flagged, rival, by="user:ana", because=rid)
    again = dg.materialize(
        [claims_evidence, claims_contradictions_resolved],
        resources={"kbflow": KbflowResource(lake=ingested.uri, model=FAST_MODEL)},
    )
    assert [e.passed for e in again.get_asset_check_evaluations()] == [True]


def test_dagster_marks_exactly_the_changed_source_stale(tmp_path):
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._core.loader import LoadingContextForTest

    from kbflow.config import Settings
    from kbflow.lake import Lake
    from kbflow.pipeline import run_ingest
    from kbflow.records import Source
    from kbflow_dagster.definitions import defs
    from kbflow_dagster.ingest import instance_for, observe_sources

    lake = Lake(str(tmp_path / "lake"))
    for sid in ("alpha", "beta"):
        (tmp_path / sid).mkdir()
        (tmp_path / sid / "page.md").write_text(f"# {sid}\n\nA page about {sid}.\n")
        lake.register(Source(sid, "docs", str(tmp_path / sid)))
    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)
    assert run_ingest(settings, runner="dagster").ok

    def status() -> dict:
        resolver = CachingStaleStatusResolver(
            instance_for(lake), defs.resolve_asset_graph(), loading_context=LoadingContextForTest(instance_for(lake))
        )
        return {
            (key, sid): resolver.get_status(dg.AssetKey(key), sid).value
            for key in ("documents", "chunks", "embeddings")
            for sid in ("alpha", "beta")
        }

    published = instance_for(lake).get_latest_materialization_event(dg.AssetKey("search_index")).asset_materialization
    table = published.metadata["sources"]
    assert isinstance(table, dg.TableMetadataValue) and [r.data["source_id"] for r in table.records] == [
        "alpha",
        "beta",
    ]
    assert "from 2 sources (2 indexed)" in published.metadata["summary"].value
    versions = observe_sources(settings)
    assert set(versions) == {"alpha", "beta"} and set(status().values()) == {"FRESH"}, (status(), versions)
    (tmp_path / "alpha" / "page.md").write_text("# alpha\n\nA page about alpha, edited.\n")
    changed = observe_sources(settings)
    assert changed["alpha"] != versions["alpha"] and changed["beta"] == versions["beta"]
    now = status()
    assert now[("documents", "alpha")] == "STALE"
    assert {k: v for k, v in now.items() if k != ("documents", "alpha")} == dict.fromkeys(
        [k for k in now if k != ("documents", "alpha")], "FRESH"
    )
    assert run_ingest(settings, runner="dagster").ok
    assert set(status().values()) == {"FRESH"}


def test_refresh_schedules_from_the_registry_and_search_index_follows(tmp_path, docs_dir):
    from kbflow.config import Settings
    from kbflow.lake import Lake
    from kbflow.pipeline import run_ingest
    from kbflow_dagster.corpus import PER_SOURCE, embeddings, source_files
    from kbflow_dagster.definitions import defs
    from kbflow_dagster.ingest import _resource, instance_for
    from kbflow_dagster.schedules import build_schedules

    lake = str(tmp_path / "lake")
    bad = run(lake, "add", str(docs_dir), "--type", "docs", "--id", "guide", "--refresh", "every hour")
    assert bad.exit_code == 1 and "not a cron expression of 5 fields" in bad.output
    out = run(lake, "add", str(docs_dir), "--type", "docs", "--id", "guide", "--refresh", "0 */6 * * *",
              "--max-file-mb", "2")  # fmt: skip
    assert out.exit_code == 0 and "schedule refresh_guide" in out.output
    again = run(lake, "add", str(docs_dir), "--type", "docs", "--id", "guide")  # re-adding keeps the options
    assert again.exit_code == 0
    assert Lake(lake).get_source("guide").options == {"refresh": "0 */6 * * *", "max_file_mb": 2.0}
    [schedule] = build_schedules(lake)
    assert schedule.name == "refresh_guide" and schedule.cron_schedule == "0 */6 * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING

    settings = Settings.coerce(None, lake=lake, model=FAST_MODEL)
    assert run_ingest(settings, runner="dagster").ok  # adds the partition, publishes the index
    instance = instance_for(Lake(lake))
    request = schedule(dg.build_schedule_context(instance=instance))
    assert isinstance(request, dg.RunRequest) and request.partition_key == "guide"
    # a refreshed partition (as the schedule's run does) makes search_index due, once
    graph = defs.resolve_asset_graph()
    first = dg.evaluate_automation_conditions(defs, instance)  # what the sensor's first tick sees: nothing to do
    assert first.get_num_requested(search_index.key) == 0
    dg.materialize([source_files, *PER_SOURCE], selection=[embeddings], partition_key="guide", instance=instance,
                   resources={"kbflow": _resource(settings)})  # fmt: skip
    result = dg.evaluate_automation_conditions(defs, instance, cursor=first.cursor)
    assert result.get_num_requested(search_index.key) == 1 and graph.get(search_index.key).automation_condition
    assert run(lake, "add", str(docs_dir), "--type", "docs", "--id", "guide", "--refresh", "none").exit_code == 0
    assert build_schedules(lake) == []


def test_four_sources_ingested_by_two_workers_lose_no_row(tmp_path):
    """Four sources materialized side by side (two worker processes, concurrent commits to the same tables)
    hold exactly the rows a one-process ingest of the same sources holds."""
    from kbflow import schema as S
    from kbflow.config import Settings
    from kbflow.lake import Lake
    from kbflow.pipeline import checks, run_ingest
    from kbflow.records import Source

    shared = "## Shared\n\nThis paragraph is in every source, so its embedding is added by several workers at once.\n"
    for n in range(4):
        folder = tmp_path / f"src{n}"
        folder.mkdir()
        for f in range(6):
            (folder / f"page{f}.md").write_text(
                f"# Source {n} page {f}\n\nText {n}-{f} about topic {f * n}.\n\n{shared}"
            )

    def lake_with_sources(name: str) -> Lake:
        lake = Lake(str(tmp_path / name))
        for n in range(4):
            lake.register(Source(f"src{n}", "docs", str(tmp_path / f"src{n}")))
        return lake

    one, two = lake_with_sources("one"), lake_with_sources("two")
    first = run_ingest(Settings.coerce(None, lake=one.uri, model=FAST_MODEL), runner="dagster")
    second = run_ingest(Settings.coerce(None, lake=two.uri, model=FAST_MODEL), runner="dagster", workers=2)
    for summary in (first, second):  # on failure, say which source or check failed and why
        assert summary.ok, (
            [s.to_dict() for s in summary.sources if s.status in ("failed", "partial")],
            [c for c in summary.checks if not c["passed"]],
            summary.index_error,
        )
    assert [s.status for s in second.sources] == ["new"] * 4
    for table, key in (
        (S.DOCUMENTS, S.UNIT_HASH),
        (S.CHUNKS, S.CHUNK_ID),
        (S.EMBEDDINGS, S.CHUNK_HASH),
        (S.SEARCH, S.CHUNK_ID),
    ):
        a = sorted(one.scan(table, [key]).column(0).to_pylist())
        b = sorted(two.scan(table, [key]).column(0).to_pylist())
        assert a == b and len(b) > 0, table
    assert checks.check_keys_unique(two).passed  # the shared paragraph's embedding is kept once
    assert {s.status for s in two.sources()} == {"indexed"}
    from kbflow.errors import ConfigError

    with pytest.raises(ConfigError, match="dagster runner"):
        run_ingest(Settings.coerce(None, lake=two.uri, model=FAST_MODEL), runner="local", workers=2)


def test_a_source_refreshed_by_a_run_on_dagsters_multiprocess_executor(tmp_path, monkeypatch):
    """The refresh job run as a deployment runs it: launched by Dagster (execute_job of the code location,
    each step in a process of its own), not materialized in this process."""
    from kbflow.config import Settings
    from kbflow.lake import Lake
    from kbflow.pipeline import run_ingest
    from kbflow.records import Source
    from kbflow_dagster.executors import executor_from_env
    from kbflow_dagster.ingest import instance_for

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nHarbours and piers.\n")
    lake = Lake(str(tmp_path / "lake"))
    lake.register(Source("d", "docs", str(tmp_path / "d")))
    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)
    assert run_ingest(settings, runner="dagster").ok
    before = lake.get_source("d").content_hash
    (tmp_path / "d" / "a.md").write_text("# A\n\nHarbours, piers and lighthouses.\n")
    monkeypatch.setenv("KBFLOW_LAKE", lake.uri)
    monkeypatch.setenv("KBFLOW_MODEL", FAST_MODEL)
    instance = instance_for(lake)
    from kbflow_dagster.definitions import refresh_source_job

    job = dg.reconstructable(refresh_source_job)
    with dg.execute_job(job, instance=instance, tags={"dagster/partition": "d"}) as result:
        assert result.success
        pids = {e.pid for e in result.all_events if e.is_step_start}
    assert len(pids) == 3 and os.getpid() not in pids  # documents, chunks, embeddings: each its own process
    assert lake.get_source("d").content_hash != before  # loaded, chunked and embedded by the run
    from kbflow import schema as S

    assert any("lighthouses" in t for t in lake.scan(S.CHUNKS, [S.TEXT]).column(0).to_pylist())
    assert executor_from_env("in_process") is dg.in_process_executor
    with pytest.raises(ValueError, match="must be one of"):
        executor_from_env("ray")
    try:
        import dagster_k8s  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install dagster-k8s"):
            executor_from_env("k8s")


def test_asset_checks_carry_their_severity(ingested):
    from kbflow_dagster.corpus import CHECKS
    from kbflow_dagster.resources import KbflowResource

    result = dg.materialize(
        [search_index, *CHECKS], resources={"kbflow": KbflowResource(lake=ingested.uri, model=FAST_MODEL)}
    )
    severities = {e.check_name: (e.passed, e.severity) for e in result.get_asset_check_evaluations()}
    assert severities.pop("locators_resolve") == (True, dg.AssetCheckSeverity.WARN)
    assert set(severities.values()) == {(True, dg.AssetCheckSeverity.ERROR)} and len(severities) == 4


def test_observing_the_sources_records_each_ones_fingerprint_as_its_data_version(ingested, fast_settings, docs_dir):
    from kbflow_dagster.ingest import observe_sources

    versions = observe_sources(fast_settings)
    assert versions == {s.source_id: s.loaded_hash for s in ingested.sources()}
    (docs_dir / "guide.md").write_text("# Guide\n\nA changed page.\n")
    changed = observe_sources(fast_settings)
    assert changed["docs"] != versions["docs"] and changed["repo"] == versions["repo"]


def test_search_shows_a_files_terminal_escapes_as_text_and_resolve_gives_them_exactly(tmp_path):
    """A file's ANSI sequences (colour, window title) and a bidirectional override would be obeyed by the
    terminal `kbflow search` prints to; they are shown as escapes. `resolve` piped gives the exact text."""
    from kbflow.cli.options import for_terminal

    folder = tmp_path / "docs"
    folder.mkdir()
    raw = "The pump \x1b[31mRED\x1b[0m is primed. \x1b]0;pwned\x07 Valves \u202egreased\u202c in spring.\r"
    (folder / "a.md").write_text(f"# Pump\n\n{raw}\n")
    lake, runner = str(tmp_path / "lake"), CliRunner()
    assert runner.invoke(main, ["--lake", lake, "add", str(folder), "--type", "docs"]).exit_code == 0
    assert runner.invoke(main, ["--lake", lake, "ingest", "--model", "hash:64"]).exit_code == 0
    shown = runner.invoke(main, ["--lake", lake, "search", "pump primed valves", "-k", "1", "--no-log"])
    assert shown.exit_code == 0 and "\x1b" not in shown.output and "\u202e" not in shown.output
    assert "The pump \\x1b[31mRED\\x1b[0m is primed. \\x1b]0;pwned\\x07 Valves \\u202egreased\\u202c" in shown.output
    hit = json.loads(runner.invoke(main, ["--lake", lake, "search", "pump", "-k", "1", "--json", "--no-log"]).output)
    exact = runner.invoke(main, ["--lake", lake, "resolve", hit["chunk_id"]])
    assert raw.rstrip("\r") in exact.output  # not a terminal: the text exactly
    assert for_terminal("tab\tand\nnewline stay") == "tab\tand\nnewline stay"


def test_insights_and_claims_print_anyones_escapes_as_text(tmp_path):
    """Queries come from anyone who can reach the server and claims from any agent: `kbflow insights` and the
    claims commands print their control characters as escapes, never to the terminal."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Pump\n\nThe pump is primed with water.\n")
    lake, runner = str(tmp_path / "lake"), CliRunner()
    assert runner.invoke(main, ["--lake", lake, "add", str(folder), "--type", "docs"]).exit_code == 0
    assert runner.invoke(main, ["--lake", lake, "ingest", "--model", "hash:64"]).exit_code == 0
    assert runner.invoke(main, ["--lake", lake, "search", "pump \x1b[2J primed"]).exit_code == 0  # logged
    shown = runner.invoke(main, ["--lake", lake, "insights", "--since", "all"])
    assert shown.exit_code == 0 and "\x1b" not in shown.output and "pump \\x1b[2J primed" in shown.output
    learned = runner.invoke(
        main, ["--lake", lake, "claims", "learn", "Pumps \x1b]0;pwned\x07 are primed", "--url", "https://example.org/a"]
    )
    assert learned.exit_code == 0, learned.output
    for command in (["claims", "list"], ["claims", "recall", "pumps primed"]):
        out = runner.invoke(main, ["--lake", lake, *command])
        assert out.exit_code == 0 and "\x1b" not in out.output and "Pumps \\x1b]0;pwned\\x07 are primed" in out.output


def test_status_and_ingest_print_a_file_names_escapes_as_text(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Pump\n\nThe pump is primed with water.\n")
    (folder / "evil\x1b[2J.md").write_bytes(bytes(range(256)) * 8)  # binary: listed as unreadable, by name
    lake, runner = str(tmp_path / "lake"), CliRunner()
    assert runner.invoke(main, ["--lake", lake, "add", str(folder), "--type", "docs"]).exit_code == 0
    runner.invoke(main, ["--lake", lake, "ingest", "--model", "hash:64"])
    status = runner.invoke(main, ["--lake", lake, "status"])
    assert "\x1b" not in status.output and "unreadable: evil\\x1b[2J.md (a binary file" in status.output


def test_ingest_on_a_lake_with_nothing_registered_says_how_to_add_a_source(tmp_path):
    result = CliRunner().invoke(main, ["--lake", str(tmp_path / "lake"), "ingest"])
    assert result.exit_code == 0, result.output
    assert "nothing is registered" in result.output and "kbflow add" in result.output
    assert "FAILED" not in result.output and not (tmp_path / "lake").exists()  # nothing checked, nothing made
