"""Keep the ``sources`` dynamic partitions in step with the lake's source registry."""

import dagster as dg

from kbflow_dagster.corpus import PER_SOURCE, sources_partitions
from kbflow_dagster.resources import KbflowResource


def partition_requests(registered: set[str], known: set[str]) -> list:
    requests = []
    if registered - known:
        requests.append(sources_partitions.build_add_request(sorted(registered - known)))
    if known - registered:
        requests.append(sources_partitions.build_delete_request(sorted(known - registered)))
    return requests


@dg.sensor(
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a partition for every source registered with `kbflow add`, and drops removed ones.",
)
def sync_source_partitions(context: dg.SensorEvaluationContext, kbflow: KbflowResource) -> dg.SensorResult:
    registered = {s.source_id for s in kbflow.open_lake().sources()}
    known = set(context.instance.get_dynamic_partitions(sources_partitions.name))
    return dg.SensorResult(dynamic_partitions_requests=partition_requests(registered, known))


def stale_run_requests(stale_ids: list[str], known: set[str]) -> list:
    """One run per stale source that has a partition (the partition sensor adds the others first)."""
    return [
        dg.RunRequest(run_key=None, partition_key=sid, tags={"kbflow/reason": "stale"})
        for sid in sorted(stale_ids)
        if sid in known
    ]


@dg.sensor(
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    asset_selection=dg.AssetSelection.assets(*PER_SOURCE),
    description="Off by default. Fingerprints every source (nothing is parsed) and requests a run "
    "of documents → chunks → embeddings for each one whose files changed since it was indexed. "
    "The kbflow_automation sensor then publishes search_index.",
)
def refresh_stale_sources(context: dg.SensorEvaluationContext, kbflow: KbflowResource) -> dg.SensorResult:
    from kbflow.pipeline import stale_sources

    stale = [s.source_id for s in stale_sources(kbflow.open_lake()) if s.reason in ("changed", "never indexed")]
    known = set(context.instance.get_dynamic_partitions(sources_partitions.name))
    if stale:
        context.log.info(f"stale sources: {', '.join(stale)}")
    return dg.SensorResult(run_requests=stale_run_requests(stale, known))
