"""Per-source refresh schedules, and the automation that publishes what they refresh.

``kbflow add PATH --refresh "0 */6 * * *"`` stores a cron expression with the
source; the code location turns each into a Dagster schedule
``refresh_<source id>`` (running by default) that materializes that source's
partition of ``documents → chunks → embeddings``. Schedules are read from the
registry of the lake the code location points at (``$KBFLOW_LAKE``, else
``./data/lake``) when it loads: reload the code location after adding or
changing one.

``search_index`` then follows on its own: its automation condition is
Dagster's ``eager`` (materialize once its dependencies updated, never while
one of them is still being materialized), evaluated by the ``kbflow_automation``
sensor every ``$KBFLOW_AUTOMATION_SECONDS`` (default 120) seconds: every
partition refreshed within that window is published by one run.
"""

from __future__ import annotations

import re
import warnings

import dagster as dg

from kbflow.config import resolve_lake
from kbflow.config.env import env_int
from kbflow.errors import KbflowError
from kbflow.lake import Lake
from kbflow.pipeline.registration import REFRESH_OPTION
from kbflow_dagster.corpus import PER_SOURCE, sources_partitions

__all__ = ["AUTOMATION_SECONDS", "automation_sensor", "build_schedules", "refresh_job"]

#: the debounce window of the automation sensor: changes within it are published by one run of search_index
AUTOMATION_SECONDS = env_int("KBFLOW_AUTOMATION_SECONDS", 120)

refresh_job = dg.define_asset_job(
    "refresh_source",
    selection=dg.AssetSelection.assets(*PER_SOURCE),
    partitions_def=sources_partitions,
    description="documents → chunks → embeddings of one source (its partition).",
)

automation_sensor = dg.AutomationConditionSensorDefinition(
    "kbflow_automation",
    target=dg.AssetSelection.all(),
    minimum_interval_seconds=AUTOMATION_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Evaluates the assets' automation conditions: publishes search_index once the sources refreshed "
    f"in the last {AUTOMATION_SECONDS} s (KBFLOW_AUTOMATION_SECONDS) settle.",
)


def _name(source_id: str) -> str:
    return "refresh_" + re.sub(r"[^A-Za-z0-9_]", "_", source_id)


def schedule_for(source_id: str, cron: str) -> dg.ScheduleDefinition:
    """The schedule materializing ``source_id``'s partition on ``cron``."""

    @dg.schedule(
        name=_name(source_id),
        cron_schedule=cron,
        job=refresh_job,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"Refreshes source {source_id} ({cron}), set by `kbflow add --refresh`.",
        tags={"kbflow/source": source_id},
    )
    def refresh(context: dg.ScheduleEvaluationContext):
        if source_id not in context.instance.get_dynamic_partitions(sources_partitions.name):
            return dg.SkipReason(f"source {source_id} has no partition yet (the sync_source_partitions sensor adds it)")
        return dg.RunRequest(partition_key=source_id, tags={"kbflow/reason": "schedule"})

    return refresh


def build_schedules(lake: str | None = None) -> list[dg.ScheduleDefinition]:
    """One schedule per source with a refresh cron in the registry of ``lake`` (none if there is no lake yet)."""
    uri = resolve_lake(lake)
    try:
        handle = Lake(uri, create=False)
        sources = handle.sources() if handle.has_table("sources") else []
    except KbflowError:
        return []
    out = []
    for source in sources:
        cron = (source.options or {}).get(REFRESH_OPTION)
        if not cron:
            continue
        try:
            out.append(schedule_for(source.source_id, cron))
        except Exception as exc:  # a cron Dagster refuses: the code location still loads
            warnings.warn(f"{source.source_id}: refresh schedule {cron!r} refused by Dagster ({exc})", stacklevel=2)
    return out
