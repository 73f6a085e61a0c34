"""Keep the ``sources`` dynamic partitions in step with the lake's source registry."""

import dagster as dg

from kbflow.config.env import env_int
from kbflow_dagster.corpus import PER_SOURCE, fingerprints, sources_partitions
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


#: how often the stale-source sensor fingerprints the sources: changes within one interval are one run per source
REFRESH_SECONDS = env_int("KBFLOW_REFRESH_SECONDS", 300)


def stale_run_requests(stale: dict[str, str], known: set[str]) -> list:
    """One run per stale source that has a partition (the partition sensor adds the others first), keyed by
    its fingerprint: the same change is never requested twice, whatever the sensor's ticks."""
    return [
        dg.RunRequest(run_key=f"{sid}:{fingerprint}", partition_key=sid, tags={"kbflow/reason": "stale"})
        for sid, fingerprint in sorted(stale.items())
        if sid in known
    ]


@dg.sensor(
    minimum_interval_seconds=REFRESH_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    asset_selection=dg.AssetSelection.assets(*PER_SOURCE),
    description=f"Every {REFRESH_SECONDS} s (KBFLOW_REFRESH_SECONDS), fingerprints every source (nothing is parsed) "
    "and requests one run of documents → chunks → embeddings for each source whose files changed since it was "
    "indexed (several changes within an interval: one run). The kbflow_automation sensor then publishes "
    "search_index. Turn it off in the UI to refresh by schedules or by hand only.",
)
def refresh_stale_sources(context: dg.SensorEvaluationContext, kbflow: KbflowResource) -> dg.SensorResult:
    from kbflow.pipeline import stale_sources

    lake = kbflow.open_lake()
    found = [s for s in stale_sources(lake) if s.reason in ("changed", "never indexed")]
    stale = {s.source_id: s.fingerprint for s in found if s.fingerprint}  # a changed source: fingerprinted once
    fresh = [s.source_id for s in found if not s.fingerprint]  # never indexed: fingerprinted here
    stale.update({sid: version.value for sid, version in fingerprints(lake, fresh).items()})
    known = set(context.instance.get_dynamic_partitions(sources_partitions.name))
    if stale:
        context.log.info(f"stale sources: {', '.join(sorted(stale))}")
    return dg.SensorResult(run_requests=stale_run_requests(stale, known))
