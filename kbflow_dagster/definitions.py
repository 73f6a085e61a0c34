"""The Dagster definitions: ``dagster dev`` at the repo root loads these."""

from __future__ import annotations

import dagster as dg

from kbflow_dagster.claims import claims_contradictions_resolved, claims_evidence, claims_evidence_fresh
from kbflow_dagster.corpus import CHECKS, PER_SOURCE, search_index, source_files
from kbflow_dagster.evaluation import build_eval_assets
from kbflow_dagster.executors import executor_from_env
from kbflow_dagster.resources import KbflowResource
from kbflow_dagster.schedules import automation_sensor, build_schedules, refresh_job
from kbflow_dagster.sensors import refresh_stale_sources, sync_source_partitions
from kbflow_dagster.usage import insights

defs = dg.Definitions(
    assets=[source_files, *PER_SOURCE, search_index, claims_evidence, insights, *build_eval_assets()],
    asset_checks=[*CHECKS, claims_evidence_fresh, claims_contradictions_resolved],
    jobs=[refresh_job],
    schedules=build_schedules(),
    sensors=[sync_source_partitions, refresh_stale_sources, automation_sensor],
    resources={"kbflow": KbflowResource()},
    executor=executor_from_env(),
)


def refresh_source_job() -> dg.JobDefinition:
    """The resolved ``refresh_source`` job, for ``dagster.reconstructable`` (running it with ``execute_job``
    outside a code-location server, as the tests do)."""
    return defs.resolve_job_def("refresh_source")
