"""The evaluation assets: a retrieval sweep as Dagster partitions, one per configuration.

::

    eval_lake ──> eval_run [one partition per configuration of the sweep] ──> eval_summary

- ``eval_lake`` ingests the dataset's corpus into its evaluation lake once per
  (model, chunk budget) the sweep needs, tagging the lake after each: those
  tags are the snapshots the configurations are evaluated against. A chunk
  text already embedded by a model is never embedded again.
- ``eval_run`` evaluates one configuration against its tagged snapshot and
  stores the run in the lake's ``eval_runs`` table.
- ``eval_summary`` collects the latest run of every configuration at the
  current snapshots into a Markdown table and a PNG plot (materialization
  metadata; the PNG is also written beside the lake).

The dataset and the sweep come from ``$KBFLOW_EVAL_DATASET`` (default: the
bundled ``data/samples/minieval``) and ``$KBFLOW_SWEEP`` (default:
``bench/sweep.yaml``); the lake from ``$KBFLOW_EVAL_HOME`` as for ``kbflow
eval``. The partitions are the sweep's configurations, named by
:func:`kbflow.evaluate.sweep.config_label`, read when the definitions load.
"""

# no `from __future__ import annotations` here: Dagster inspects the context type hints at runtime

import base64
import time
from pathlib import Path
from typing import Any

import dagster as dg

from kbflow import schema as S
from kbflow.config import Settings
from kbflow.config.env import env
from kbflow.errors import DatasetError
from kbflow.evaluate.beir import load_beir
from kbflow.evaluate.configs import group_key, ingest_groups, settings_for
from kbflow.evaluate.evaluate import evaluate
from kbflow.evaluate.lakes import eval_lake_uri, group_tag, snapshot_lake
from kbflow.evaluate.report import markdown_table, plot_runs
from kbflow.evaluate.runs import config_key, load_runs, save_runs
from kbflow.evaluate.sweep import config_labels, load_sweep
from kbflow.lake import Lake

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = REPO / "data" / "samples" / "minieval"
DEFAULT_SWEEP = REPO / "bench" / "sweep.yaml"

GROUP = "evaluation"


def build_eval_assets(
    dataset_dir: str | None = None,
    sweep_file: str | None = None,
    *,
    eval_lake: str | None = None,
    settings: Settings | None = None,
) -> list:
    """The three evaluation assets for one dataset and one sweep file.

    ``dataset_dir``/``sweep_file`` default to ``$KBFLOW_EVAL_DATASET``/``$KBFLOW_SWEEP``,
    then to the bundled sample and ``bench/sweep.yaml``; ``eval_lake`` to
    ``$KBFLOW_EVAL_HOME`` or ``./data/eval``, then ``<name>-<corpus hash>``.
    """
    dataset_dir = str(dataset_dir or env("KBFLOW_EVAL_DATASET") or DEFAULT_DATASET)
    sweep_file = str(sweep_file or env("KBFLOW_SWEEP") or DEFAULT_SWEEP)
    settings = settings or Settings()
    configs = load_sweep(sweep_file, settings)
    labels = config_labels(configs)
    config_of = dict(zip(labels, configs))
    partitions = dg.StaticPartitionsDefinition(labels)

    @dg.asset(
        name="eval_lake",
        group_name=GROUP,
        description=f"The corpus of {dataset_dir} ingested once per model and chunk budget of {sweep_file}, "
        "tagged after each: the snapshots the sweep is evaluated against.",
    )
    def eval_lake_asset(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return _snapshots(context, dataset_dir, configs, settings, eval_lake)

    @dg.asset(
        name="eval_run",
        group_name=GROUP,
        partitions_def=partitions,
        deps=[eval_lake_asset],
        description="One sweep configuration evaluated against its tagged lake snapshot; the run is stored in "
        "eval_runs.",
    )
    def eval_run(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return _evaluate_partition(config_of[context.partition_key], dataset_dir, settings, eval_lake)

    @dg.asset(
        name="eval_summary",
        group_name=GROUP,
        deps=[eval_run],
        description="Every configuration's latest run at the current snapshots, ranked: a Markdown table and a "
        "PNG plot.",
    )
    def eval_summary(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        return _summary(context, dataset_dir, config_of, configs, eval_lake)

    return [eval_lake_asset, eval_run, eval_summary]


def _snapshots(
    context: Any, dataset_dir: str, configs: list, settings: Settings, eval_lake: str | None
) -> dg.MaterializeResult:
    """``eval_lake``: the corpus ingested once per model and chunk budget, each snapshot tagged."""
    t0 = time.perf_counter()
    dataset = load_beir(dataset_dir)
    uri = eval_lake or eval_lake_uri(dataset)
    snapshots = snapshot_lake(dataset, configs, settings, lake=uri)
    lake = Lake(uri)
    lake.table(S.EVAL_RUNS)  # created here, before partition runs append to it side by side
    for (model, max_tokens, *_flags), info in snapshots.items():
        context.log.info(
            f"{model} at {max_tokens} tokens: {info['status']}, {info['chunks_embedded']} embedded, tag {info['tag']}"
        )
    return dg.MaterializeResult(
        metadata={
            "lake": dg.MetadataValue.path(uri),
            "dataset": dataset.name,
            "queries": len(dataset),
            "tags": dg.MetadataValue.json(
                {
                    f"{m} t{t}" + ("" if cx else " no context") + ("" if tb else " no tables"): info
                    for (m, t, cx, tb), info in snapshots.items()
                }
            ),
            "chunks_embedded": sum(info["chunks_embedded"] for info in snapshots.values()),
            "seconds": round(time.perf_counter() - t0, 3),
        }
    )


def _evaluate_partition(
    config: dict, dataset_dir: str, settings: Settings, eval_lake: str | None
) -> dg.MaterializeResult:
    """``eval_run``: one configuration evaluated against its tagged snapshot, the run stored."""
    dataset = load_beir(dataset_dir)
    lake = Lake(eval_lake or eval_lake_uri(dataset), create=False)
    tag = group_tag(lake, *group_key(config))
    if tag is None:
        raise DatasetError(
            f"{lake.uri}: no snapshot for {config['model']} at {config['max_tokens']} tokens; "
            "materialize eval_lake first"
        )
    (run,) = evaluate(dataset, lake, [config], settings_for(settings, config), tag=tag)
    save_runs(lake, [run])
    return dg.MaterializeResult(
        metadata={
            "run_id": run.run_id,
            "lake_tag": tag,
            "search_version": run.lake_version,
            **{name: round(value, 4) for name, value in run.metrics.items()},
            "p50_ms": round(run.latency_ms["p50"], 2),
            "p95_ms": round(run.latency_ms["p95"], 2),
            "queries": run.queries,
            "config": dg.MetadataValue.json(config),
        }
    )


def _summary(
    context: Any, dataset_dir: str, config_of: dict, configs: list, eval_lake: str | None
) -> dg.MaterializeResult:
    """``eval_summary``: each configuration's latest run at the current snapshots, ranked, as a table and a plot."""
    dataset = load_beir(dataset_dir)
    lake = Lake(eval_lake or eval_lake_uri(dataset), create=False)
    latest = {}
    for run in load_runs(lake, dataset=dataset.name):  # oldest first: the last one wins
        latest[(config_key(run.config), run.lake_tag)] = run
    tags = {group: group_tag(lake, *group) for group in ingest_groups(configs)}  # the current snapshots
    runs, missing = [], []
    for label, config in config_of.items():
        run = latest.get((config_key(config), tags[group_key(config)]))
        if run is None:
            missing.append(label)
        else:
            runs.append(run)
    if not runs:
        raise DatasetError(f"{lake.uri}: no run of this sweep at the current snapshots yet; materialize eval_run")
    if missing:
        context.log.warning(f"{len(missing)} configurations not evaluated yet: {', '.join(missing)}")
    png_path = f"{lake.uri.removeprefix('file://').rstrip('/')}-sweep.png" if lake.is_local else None
    png = plot_runs(runs, png_path)
    best = max(runs, key=lambda r: r.metrics["ndcg@10"])
    metadata = {
        "summary": dg.MetadataValue.md(markdown_table(runs)),
        "plot": dg.MetadataValue.md(f"![sweep](data:image/png;base64,{base64.b64encode(png).decode()})"),
        "configurations": len(runs),
        "missing": dg.MetadataValue.json(missing),
        "best": [label for label, c in config_of.items() if c == best.config][0],
        "best_ndcg@10": round(best.metrics["ndcg@10"], 4),
    }
    if png_path:
        metadata["plot_path"] = dg.MetadataValue.path(png_path)
    return dg.MaterializeResult(metadata=metadata)
