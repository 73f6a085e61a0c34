"""The evaluation assets: eval_lake -> eval_run (one partition per configuration) -> eval_summary, real Dagster."""

from __future__ import annotations

import base64
import json

import dagster as dg
from conftest import SAMPLES

SWEEP = """
grid:
  mode: hybrid
  fusion: [rrf, convex]
  model: "hash:64"
  max_tokens: [48, 200]
include:
  - {mode: bm25, model: "hash:64"}
"""


def _materialize(assets, selection, partition_key=None):
    return dg.materialize(
        assets,
        selection=selection,
        partition_key=partition_key,
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


def _meta(result, node):
    (mat,) = result.asset_materializations_for_node(node)
    return mat.metadata


def test_sweep_partitions_summary_table_and_plot(tmp_path):
    from kbflow_dagster.evaluation import build_eval_assets

    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(SWEEP)
    lake = str(tmp_path / "evallake")
    assets = build_eval_assets(str(SAMPLES / "minieval"), str(sweep), eval_lake=lake)
    eval_lake, eval_run, eval_summary = assets
    keys = eval_run.partitions_def.get_partition_keys()
    assert keys == [
        "hybrid_rrf60_d1-b0.5_x3_t48_m-hash-64",
        "hybrid_rrf60_d1-b0.5_x3_t200_m-hash-64",
        "hybrid_convex_d1-b0.5_x3_t48_m-hash-64",
        "hybrid_convex_d1-b0.5_x3_t200_m-hash-64",
        "bm25_x3_t200_m-hash-64",
    ]

    early = _materialize(assets, [eval_run], keys[0])
    assert not early.success  # no snapshot yet: a clear error, nothing written

    first = _meta(_materialize(assets, [eval_lake]), "eval_lake")
    tags = first["tags"].value
    assert set(tags) == {"hash:64 t48", "hash:64 t200"} and first["chunks_embedded"].value > 0
    # a second materialization finds the same snapshots and embeds nothing
    again = _meta(_materialize(assets, [eval_lake]), "eval_lake")
    assert again["chunks_embedded"].value == 0
    assert {k: v["tag"] for k, v in again["tags"].value.items()} == {k: v["tag"] for k, v in tags.items()}

    for key in keys[:4]:  # the bm25 partition is left out: the summary says so
        result = _materialize(assets, [eval_run], key)
        assert result.success
        meta = _meta(result, "eval_run")
        config = meta["config"].value
        assert meta["lake_tag"].value == tags[f"hash:64 t{config['max_tokens']}"]["tag"]
        assert 0.0 <= meta["ndcg@10"].value <= 1.0

    summary = _meta(_materialize(assets, [eval_summary]), "eval_summary")
    table = summary["summary"].value
    assert table.startswith("| # | configuration | nDCG@10")
    assert all(f"`{key}`" in table for key in keys[:4]) and keys[4] not in table
    assert summary["missing"].value == [keys[4]]
    png = base64.b64decode(summary["plot"].value.split("base64,", 1)[1].rstrip(")"))
    assert png.startswith(b"\x89PNG")
    with open(summary["plot_path"].value, "rb") as fh:
        assert fh.read() == png
    assert summary["best"].value in keys

    from kbflow.evaluate.runs import load_runs
    from kbflow.lake import Lake

    stored = load_runs(Lake(lake))
    assert len(stored) == 4 and {r.lake_tag for r in stored} == {v["tag"] for v in tags.values()}
    assert all(json.loads(json.dumps(r.config)) == r.config for r in stored)


def test_labels_and_reports():
    from kbflow.config import Settings
    from kbflow.evaluate.report import markdown_table, runs_frame
    from kbflow.evaluate.runs import EvalRun
    from kbflow.evaluate.sweep import config_label, config_labels, expand_grid

    settings = Settings(lake="/tmp/unused", model="sentence-transformers/all-MiniLM-L6-v2")
    configs = expand_grid({"grid": {"mode": ["hybrid", "dense"], "dense_weight": [1.0, 0.7]}}, settings)
    assert [config_label(c) for c in configs] == [
        "hybrid_convex_d1-b0.5_x3_t200",
        "hybrid_convex_d0.7-b0.5_x3_t200",
        "dense_x3_t200",
    ]
    a = dict(configs[0], model="/models/a/e5")
    b = dict(configs[0], model="/models/b/e5")
    labels = config_labels([a, b])
    assert labels[0] != labels[1] and all(label.startswith("hybrid_convex_d1-b0.5_x3_t200_m-e5_") for label in labels)

    def run(config, ndcg):
        metrics = {"ndcg@10": ndcg, "recall@10": 0.5, "recall@100": 0.9, "mrr@10": 0.4}
        return EvalRun("d", "test", "h", 3, config, metrics, {"p50": 1.0, "p95": 2.0}, 2, {}, {})

    runs = [run(configs[0], 0.4), run(configs[2], 0.6)]
    assert runs_frame(runs)["config"].to_list() == ["dense_x3_t200", "hybrid_convex_d1-b0.5_x3_t200"]
    lines = markdown_table(runs).splitlines()
    assert "| 1 | `dense_x3_t200` | **0.6000** |" in lines[2]
    # a cell per column: the head, its rule and every row agree (the vs #1 cell: no per-query scores here)
    assert len({line.count("|") for line in lines}) == 1 and "vs #1 (p)" in lines[0]
    cells = [c.strip() for c in lines[3].split("|")]
    assert cells[3:5] == ["0.4000", "0.5000"] and cells[10] == "-" and cells[11] == "1.0"
