"""Keep the ``sources`` dynamic partitions in step with the lake's source registry."""


import dagster as dg

from assets.corpus import sources_partitions
from assets.resources import KbflowResource


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
