"""Evaluation: BEIR reading, metrics against hand-computed values, stored runs, comparisons."""

from __future__ import annotations

import json
import math

import pytest
from support import DOCS, QRELS, QUERIES, write_beir

from kbflow.errors import DatasetError
from kbflow.evaluate.beir import load_beir
from kbflow.evaluate.metrics import score_run


def test_metrics_match_hand_computed_values():
    qrels = {"q1": {"a": 2, "b": 1, "z": 0}, "q2": {"c": 1}, "q3": {"d": 1}}
    run = {"q1": {"b": 3.0, "x": 2.0, "a": 1.0}, "q2": {"x": 1.0, "c": 0.5}}  # q3: nothing retrieved
    means, per = score_run(qrels, run)
    # q1: gains b=1 at rank 1, a=2 at rank 3; ideal a=2, b=1
    dcg = 1 / math.log2(2) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert per["q1"]["ndcg@10"] == pytest.approx(dcg / idcg)
    assert per["q1"]["mrr@10"] == 1.0 and per["q1"]["recall@10"] == 1.0
    assert per["q2"]["ndcg@10"] == pytest.approx((1 / math.log2(3)) / 1.0)
    assert per["q2"]["mrr@10"] == 0.5
    assert set(per["q3"].values()) == {0.0} and len(per["q3"]) == 7
    # q1 has 2 relevant documents, both in the top 3: recall@5 1.0, a hit in the top 3
    assert per["q1"]["recall@5"] == 1.0 and per["q1"]["hit_rate@3"] == 1.0
    assert per["q2"]["hit_rate@3"] == 1.0 and means["hit_rate@3"] == pytest.approx(2 / 3)
    assert means["mrr@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert means["ndcg@10"] == pytest.approx((dcg / idcg + 1 / math.log2(3)) / 3)


def test_load_beir_keeps_judged_queries(tmp_path):
    write_beir(tmp_path, [("d1", "", "x")], [("q1", "one"), ("q2", "two")], [("q1", "d1", 1), ("q2", "d1", 0)])
    ds = load_beir(str(tmp_path))
    assert ds.queries == {"q1": "one"} and ds.qrels == {"q1": {"d1": 1}} and len(ds) == 1


@pytest.mark.parametrize(
    "breakage, message",
    [
        ("no_qrels", r"qrels/test.tsv: missing"),
        ("bad_row", r"test.tsv:2: expected query-id"),
        ("bad_query", r"queries.jsonl:1: invalid JSON"),
        ("unknown_query", r"judged queries are not in"),
        ("repeated_query", r"queries.jsonl:2: query id 'q1' appears again"),
        ("empty_query", r"queries.jsonl: 1 judged queries have no text \(first: 'q1'\)"),
    ],
)
def test_load_beir_errors_name_the_file(tmp_path, breakage, message):
    write_beir(tmp_path, [("d1", "", "x")], [("q1", "one")], [("q1", "d1", 1)])
    if breakage == "no_qrels":
        (tmp_path / "qrels" / "test.tsv").unlink()
    elif breakage == "bad_row":
        (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1 d1 1\n")
    elif breakage == "bad_query":
        (tmp_path / "queries.jsonl").write_text("{oops\n")
    elif breakage == "repeated_query":
        (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "one"}\n{"_id": "q1", "text": "again"}\n')
    elif breakage == "empty_query":  # found before the corpus is ingested, not at its search
        (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "  "}\n')
    else:
        (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq9\td1\t1\n")
    with pytest.raises(DatasetError, match=message):
        load_beir(str(tmp_path))


def run_cli(*args):
    from click.testing import CliRunner

    from kbflow.cli import main

    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_eval_cli_stores_runs_and_compares(tmp_path):
    data = tmp_path / "tiny"
    write_beir(data, DOCS, QUERIES, QRELS)
    lake = str(tmp_path / "evallake")
    out = run_cli("eval", str(data), "--model", "hash:64", "--eval-lake", lake, "--json")
    assert out.exit_code == 0, out.output
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["config"]["mode"] for r in lines] == ["hybrid", "dense", "bm25"]
    for r in lines:
        assert set(r) >= {"dataset", "lake_version", "config", "metrics", "latency_ms", "queries"}
        assert set(r["metrics"]) == {
            "ndcg@10",
            "recall@10",
            "recall@100",
            "mrr@10",
            "recall@5",
            "hit_rate@3",
            "hit_rate@5",
        }
        assert r["queries"] == 3 and r["dataset"] == "tiny" and r["lake_version"] >= 1
        assert set(r["latency_ms"]) == {"p50", "p95"}
    bm25 = lines[2]
    assert bm25["metrics"]["recall@100"] == 1.0 and bm25["metrics"]["mrr@10"] > 0.5

    # a second run re-uses the lake: nothing new is ingested, the version is the same
    again = run_cli("eval", str(data), "--model", "hash:64", "--eval-lake", lake, "--mode", "bm25", "--json")
    assert json.loads(again.stdout)["lake_version"] == bm25["lake_version"]

    from kbflow.evaluate.runs import load_runs
    from kbflow.lake import Lake

    runs = load_runs(Lake(lake))
    assert len(runs) == 4 and runs[-1].per_query.keys() == {"q1", "q2", "q3"}
    cmp = run_cli("eval", str(data), "--eval-lake", lake, "--compare", lines[1]["run_id"], lines[2]["run_id"])
    assert cmp.exit_code == 0, cmp.output
    assert "A wins" in cmp.output and "A loses" in cmp.output
    assert "paired randomization p" in cmp.output and "over 3 queries" in cmp.output
    as_json = run_cli(
        "eval", str(data), "--eval-lake", lake, "--compare", lines[1]["run_id"], lines[2]["run_id"], "--json"
    )
    test = json.loads(as_json.stdout.splitlines()[0])
    assert test["side"] == "test" and test["queries"] == 3 and 0 < test["p_value"] <= 1
    assert test["delta"] == pytest.approx(lines[1]["metrics"]["ndcg@10"] - lines[2]["metrics"]["ndcg@10"])
    bad = run_cli("eval", str(data), "--eval-lake", lake, "--compare", "zzzz", lines[2]["run_id"])
    assert bad.exit_code == 1 and "no run with id 'zzzz'" in bad.output


def test_sweep_grid_expands_and_validates(tmp_path):
    from kbflow.config import Settings
    from kbflow.evaluate.sweep import expand_grid, load_sweep

    settings = Settings(lake=str(tmp_path / "l"), model="hash:64")
    configs = expand_grid(
        {"grid": {"mode": ["hybrid", "bm25"], "fusion": ["rrf", "convex"], "rrf_k": [10, 60]}}, settings
    )
    # hybrid rrf: 2 k; convex has no k: 1; bm25 ignores fusion settings: 1
    assert len(configs) == 4
    assert sum(c["fusion"] == "convex" for c in configs) == 1
    assert sum(c["mode"] == "bm25" for c in configs) == 1
    assert all(c["model"] == "hash:64" and c["max_tokens"] == 200 for c in configs)
    with pytest.raises(DatasetError, match="unknown settings"):
        expand_grid({"grid": {"temperature": [1]}}, settings)
    with pytest.raises(DatasetError, match="rrf_k must be >= 1"):
        expand_grid({"grid": {"rrf_k": [0]}}, settings)
    path = tmp_path / "sweep.yaml"
    path.write_text("grid:\n  mode: hybrid\n  dense_weight: [0.5, 1.0]\ninclude:\n  - {mode: dense}\n")
    assert [c["dense_weight"] for c in load_sweep(str(path), settings)] == [0.5, 1.0, None]
    path.write_text("grid: [1, 2\n")
    with pytest.raises(DatasetError, match="not valid YAML"):
        load_sweep(str(path), settings)


def test_documents_rank_where_their_best_chunk_does():
    from kbflow.evaluate.evaluate import as_run, ranked_docs

    doc_of = {"c1": "d2", "c2": "d1", "c3": "d2", "c4": "d3"}
    assert ranked_docs(["c1", "c2", "c3", "cX", "c4"], doc_of) == ["d2", "d1", "d3"]
    assert ranked_docs(["c1", "c2", "c3", "c4"], doc_of, n=2) == ["d2", "d1"]
    assert as_run(["d2", "d1", "d3"]) == {"d2": 3.0, "d1": 2.0, "d3": 1.0}


def test_a_sources_dataset_is_scored_by_page_with_context_and_tables_switches(tmp_path):
    """``sources.json`` datasets: a hit counts for its PDF page; context header and tables are sweep keys."""
    import importlib.util

    from conftest import SAMPLES

    spec = importlib.util.spec_from_file_location("make_pdf", SAMPLES / "make_pdf.py")
    make_pdf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_pdf)
    data = tmp_path / "pages"
    (data / "qrels").mkdir(parents=True)
    (tmp_path / "manual.pdf").write_bytes(
        make_pdf.build(
            pages=[
                [(11, "Pumps are primed with water before start.")],
                [(11, "Valves are greased every spring by the crew.")],
                [(11, "Filters are replaced after one thousand hours.")],
            ]
        )
    )
    (data / "sources.json").write_text(
        json.dumps(
            {"name": "pages", "unit": "page", "sources": [{"id": "manual", "type": "pdf", "path": "../manual.pdf"}]}
        )
    )
    (data / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "when are valves greased"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "filters replaced hours"})
        + "\n"
    )
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tmanual.pdf#p2\t1\nq2\tmanual.pdf#p3\t1\n")
    dataset = load_beir(str(data))
    assert dataset.unit == "page" and dataset.corpus is None and dataset.sources[0]["id"] == "manual"
    from kbflow.config import Settings
    from kbflow.evaluate.configs import config_for
    from kbflow.evaluate.evaluate import evaluate_dataset
    from kbflow.evaluate.sweep import config_label

    settings = Settings.coerce(None, model="hash:64")
    configs = [config_for(settings, mode="bm25", context=c, tables=t) for c in (True, False) for t in (True, False)]
    assert [config_label(c) for c in configs][-1] == "bm25_x3_t200_m-hash-64_nocx_notab"
    runs, lake = evaluate_dataset(dataset, configs, settings, lake=str(tmp_path / "lake"))
    assert len(runs) == 4 and all(r.metrics["hit_rate@3"] == 1.0 for r in runs), [r.metrics for r in runs]
    assert all(r.top_docs["q1"][0] == "manual.pdf#p2" for r in runs)
    options = {s.source_id: dict(s.options) for s in lake.sources()}
    assert options["manual"] == {"tables": False}  # the last group ingested without tables


def test_a_sources_dataset_names_a_missing_path(tmp_path):
    data = tmp_path / "bad"
    (data / "qrels").mkdir(parents=True)
    (data / "sources.json").write_text(
        json.dumps({"unit": "page", "sources": [{"id": "x", "type": "pdf", "path": "nowhere.pdf"}]})
    )
    (data / "queries.jsonl").write_text('{"_id": "q", "text": "x"}\n')
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\tnowhere.pdf#p1\t1\n")
    with pytest.raises(DatasetError, match=r"source 'x': .*nowhere\.pdf does not exist"):
        load_beir(str(data))


def test_a_page_is_a_pdf_page_or_a_web_page():
    from kbflow.evaluate.evaluate import doc_id

    assert doc_id("page", "s", {"kind": "pdf", "path": "a.pdf", "page": 3}) == "a.pdf#p3"
    assert doc_id("page", "s", {"kind": "web", "path": "reference/profiles.html"}) == "reference/profiles.html"
    assert doc_id("page", "s", {"kind": "doc", "path": "guide.md"}) == "guide.md"
    assert doc_id("page", "s", {"kind": "code", "path": "a.py"}) is None
