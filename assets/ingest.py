"""Run the corpus assets in this process: what ``kbflow ingest`` does.

One in-process Dagster run per source partition (documents → chunks →
embeddings), then one run of ``search_index`` with its asset checks. The
Dagster instance lives beside the lake (``<lake>/.dagster``), so the run
history follows the lake, not the user's home; a remote lake uses an
ephemeral instance.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any, Iterable

import dagster as dg

from kbflow import pipeline
from kbflow.config import Settings
from kbflow.lake import Lake

from assets.corpus import CHECKS, PER_SOURCE, search_index, sources_partitions
from assets.resources import KbflowResource
from assets.sensors import partition_requests

# step failures are reported in the summary; keep Dagster's own log lines off the terminal
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
_INSTANCE_YAML = "telemetry:\n  enabled: false\n"


def instance_for(lake: Lake) -> dg.DagsterInstance:
    """The Dagster instance of ``lake``: ``<lake>/.dagster`` for a local lake, ephemeral otherwise."""
    if not lake.is_local:
        return dg.DagsterInstance.ephemeral()
    home = os.path.join(lake.uri.removeprefix("file://"), ".dagster")
    os.makedirs(home, exist_ok=True)
    config = os.path.join(home, "dagster.yaml")
    if not os.path.exists(config):
        with open(config, "w") as fh:
            fh.write(_INSTANCE_YAML)
    return dg.DagsterInstance.from_config(home)


def _failure(result: dg.ExecuteInProcessResult) -> str:
    """The message of the kbflow error behind a failed run (not Dagster's wrapper)."""
    for event in result.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            if error is None:
                return "step failed"
            while error.cause is not None and error.cls_name == "DagsterExecutionStepExecutionError":
                error = error.cause
            message = (error.message or "").strip()
            prefix = f"{error.cls_name}: " if error.cls_name else ""
            for candidate in (f"kbflow.errors.{prefix}", prefix):
                if candidate and message.startswith(candidate):
                    message = message[len(candidate) :]
            return message.splitlines()[0] if message else (error.cls_name or "step failed")
    return "run failed"


def _meta(result: dg.ExecuteInProcessResult, node: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mat in result.asset_materializations_for_node(node):
        out.update({k: v.value for k, v in mat.metadata.items()})
    return out


def run_ingest(
    settings: Settings,
    source_ids: Iterable[str] | None = None,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """Materialize the assets for ``source_ids`` (default: every registered source).

    Returns the ``kbflow ingest --json`` summary: ``{"sources": [...],
    "versions": {table: version}, "seconds", "checks": [...]}``.
    """
    t0 = time.perf_counter()
    lake = Lake(settings.lake)
    registered = [s.source_id for s in lake.sources()]
    ids = list(source_ids) if source_ids is not None else registered
    unknown = sorted(set(ids) - set(registered))
    if unknown:
        from kbflow.errors import SourceNotFoundError

        raise SourceNotFoundError(f"not registered in {lake.uri}: {', '.join(unknown)} (see `kbflow status`)")

    warnings.filterwarnings("ignore", module="dagster")
    instance = instance_for(lake)
    known = set(instance.get_dynamic_partitions(sources_partitions.name))
    for request in partition_requests(set(registered), known):
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(sources_partitions.name, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(sources_partitions.name, key)
    resources = {"kbflow": KbflowResource(lake=settings.lake, model=settings.model, progress=progress)}

    bar = None
    if progress and ids:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(ids), desc="ingest", unit="source", file=sys.stderr)
    reports = []
    for sid in ids:
        if bar is not None:
            bar.set_postfix_str(sid)
        result = dg.materialize(
            PER_SOURCE, partition_key=sid, instance=instance, resources=resources, raise_on_error=False, run_config=_QUIET
        )
        if not result.success:
            reports.append(pipeline.SourceReport(sid, "failed", error=_failure(result)))
        else:
            load, chunk, embed = _meta(result, "documents"), _meta(result, "chunks"), _meta(result, "embeddings")
            report = pipeline.source_report(
                sid,
                load.get("status", "unchanged"),
                chunk.get("chunks_added", 0),
                chunk.get("chunks_removed", 0),
                embed.get("chunks_embedded", 0),
            )
            reports.append(report)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()

    result = dg.materialize(
        [search_index, *CHECKS], instance=instance, resources=resources, raise_on_error=False, run_config=_QUIET
    )
    checks = [
        {"name": ev.check_name, "passed": ev.passed, "metadata": {k: v.value for k, v in ev.metadata.items()}}
        for ev in result.get_asset_check_evaluations()
    ]
    return {
        "sources": [r.to_dict() for r in reports],
        "versions": lake.versions(),
        "seconds": round(time.perf_counter() - t0, 3),
        "checks": checks,
        "index_error": None if result.success else _failure(result),
    }
