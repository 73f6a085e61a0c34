"""Run the corpus assets in this process: the ``dagster`` runner of ``kbflow ingest``.

One in-process Dagster run per source partition (documents → chunks →
embeddings), then one run of ``search_index`` with its asset checks. The
Dagster instance lives beside the lake (``<lake>/.dagster``), so the run
history follows the lake, not the user's home; a remote lake uses an
ephemeral instance.

The summary is built exactly as the library's own runner builds it
(:mod:`kbflow.pipeline.results`): each asset passes its step result through
its materialization metadata, and a failed step has recorded its error in the
lake's registry, where :func:`kbflow.pipeline.failed_report` reads it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg

from kbflow import pipeline
from kbflow import schema as S
from kbflow.config import Settings
from kbflow.config.env import env
from kbflow.errors import LakeStorageError
from kbflow.index.search import IndexResult
from kbflow.lake import Lake
from kbflow.lake.lease import lease
from kbflow.pipeline.results import ChunkResult, EmbedResult, IngestSummary, LoadResult
from kbflow.pipeline.skeleton import Outcome, Steps, run_phases
from kbflow_dagster.claims import claims_evidence
from kbflow_dagster.corpus import (
    CHECKS,
    DATA_VERSION_TAG,
    ERROR_KIND,
    PER_SOURCE,
    RESULT,
    search_index,
    source_files,
    sources_partitions,
)
from kbflow_dagster.resources import KbflowResource
from kbflow_dagster.sensors import partition_requests

__all__ = ["dagster_home", "instance_for", "observe_sources", "run_ingest"]

# step failures are reported in the summary; keep Dagster's own log lines off the terminal
log = logging.getLogger("kbflow.dagster")

_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
_INSTANCE_YAML = "telemetry:\n  enabled: false\n"


def dagster_home(lake: Lake) -> str:
    """Where the Dagster instance of ``lake`` lives: ``$KBFLOW_DAGSTER_HOME``; else ``<lake>/.dagster`` for a
    local lake; else (a lake on object storage, where Dagster's storage cannot live)
    ``~/.kbflow/dagster/<hash of the lake's URI>`` on this machine."""
    home = env("KBFLOW_DAGSTER_HOME")
    if home:
        return home
    if lake.is_local:
        return os.path.join(lake.uri.removeprefix("file://"), ".dagster")
    from kbflow.records import ids

    return os.path.join(os.path.expanduser("~"), ".kbflow", "dagster", ids.digest(lake.uri, size=8))


def instance_for(lake: Lake) -> dg.DagsterInstance:
    """The Dagster instance of ``lake``, in :func:`dagster_home` (created on first use)."""
    home = dagster_home(lake)
    os.makedirs(home, exist_ok=True)
    config = os.path.join(home, "dagster.yaml")
    if not os.path.exists(config):
        with open(config, "w") as fh:
            fh.write(_INSTANCE_YAML)
    return dg.DagsterInstance.from_config(home)


def observe_sources(settings: Settings, instance: dg.DagsterInstance | None = None) -> dict[str, str]:
    """Observe ``source_files`` now (every registered source's fingerprint) in the lake's Dagster instance, so
    Dagster marks the partitions of changed sources stale; returns ``{source id: data version}``."""
    lake = Lake(settings.lake, create=False)
    if instance is None:
        instance = instance_for(lake)
        _sync_partitions(instance, {s.source_id for s in lake.sources()})
    # an observation job, run in this process (Dagster's `materialize` does not observe source assets)
    job = dg.define_asset_job("observe_source_files", selection=[source_files])
    defs = dg.Definitions(assets=[source_files], jobs=[job], resources={"kbflow": _resource(settings)})
    with warnings.catch_warnings():  # the partitioned data versions' beta notice: Dagster's, not the user's
        warnings.simplefilter("ignore", dg.BetaWarning)
        run = defs.resolve_job_def(job.name)
        result = run.execute_in_process(instance=instance, raise_on_error=False, run_config=_QUIET)
    if not result.success:  # the ingest goes on; only Dagster's staleness marks miss this run's versions
        log.warning("could not observe the sources' data versions: %s", _error(result))
    out = {}
    for event in result.get_asset_observation_events():
        obs = event.asset_observation_data.asset_observation
        out[obs.partition] = obs.tags.get(DATA_VERSION_TAG)
    return out


def _resource(settings: Settings, progress: bool = False) -> KbflowResource:
    return KbflowResource(
        lake=settings.lake,
        model=settings.model,
        backend=settings.backend,
        embed_threads=settings.embed_threads or 0,
        engine=settings.engine,
        engine_actors=settings.engine_actors or 0,
        progress=progress,
    )


def _error(result: dg.ExecuteInProcessResult) -> str:
    """Why a run failed: kbflow's message (a step's :class:`dagster.Failure` description), else the first
    line of the unexpected error behind it. A storage failure of the lake stops the whole run, as in the
    library's own runner: it is raised."""
    for event in result.all_events:
        if event.is_step_failure:
            data = event.step_failure_data
            if data.user_failure_data is not None and data.user_failure_data.description:
                kind = data.user_failure_data.metadata.get(ERROR_KIND)
                if kind is not None and kind.value == LakeStorageError.__name__:
                    raise LakeStorageError(data.user_failure_data.description)
                return data.user_failure_data.description
            error = data.error
            while (
                error is not None and error.cause is not None and error.cls_name == "DagsterExecutionStepExecutionError"
            ):
                error = error.cause
            if error is None:
                return "step failed"
            message = (error.message or "").strip().splitlines()
            return message[0] if message else (error.cls_name or "step failed")
    return "run failed"


def _result(result: dg.ExecuteInProcessResult, node: str) -> dict[str, Any]:
    """The step result an asset recorded in its materialization metadata."""
    for mat in result.asset_materializations_for_node(node):
        if RESULT in mat.metadata:
            return dict(mat.metadata[RESULT].value)
    raise RuntimeError(f"asset {node} recorded no result")


def _sync_partitions(instance: dg.DagsterInstance, registered: set[str]) -> None:
    known = set(instance.get_dynamic_partitions(sources_partitions.name))
    for request in partition_requests(registered, known):
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(sources_partitions.name, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(sources_partitions.name, key)


def run_ingest(
    settings: Settings,
    source_ids: list[str] | None = None,
    *,
    progress: bool = False,
    checks: bool = True,
    wait: float = 0.0,
    workers: int = 1,
) -> IngestSummary:
    """Materialize the assets for ``source_ids`` (default: every registered source).

    Returns the same :class:`~kbflow.pipeline.IngestSummary` as
    :func:`kbflow.pipeline.ingest`; ``checks`` runs the asset checks of
    ``search_index`` with it. Like it, the run holds the lake's exclusive
    write lease (waiting up to ``wait`` seconds for another writer) and first
    repairs duplicate keys.

    ``workers`` > 1 materializes the partitions of different sources side by
    side, one Dagster run per source in each of that many worker processes
    (each loads the model once). Their concurrent commits to the same tables
    are reconciled by Lance (appends, deletes and merges of different sources
    never conflict; a conflicting commit is retried on the new version); an
    embedding two sources added at once is deduplicated before the index is
    published.
    """
    t0 = time.perf_counter()
    if not isinstance(workers, int) or not 1 <= workers <= 64:
        from kbflow.errors import ConfigError

        raise ConfigError(f"workers must be in 1..64, got {workers!r}")
    if workers > 1 and settings.embed_threads is None:  # the workers share the cores instead of each taking all
        from dataclasses import replace

        settings = replace(settings, embed_threads=max(1, (os.cpu_count() or 1) // workers))
    lake = Lake(settings.lake)
    with lease(lake.uri, "kbflow ingest", wait=wait):
        return _run(lake, settings, source_ids, progress, checks, t0, workers)


def _materialize_source(
    settings: Settings, source_id: str, progress: bool, instance: dg.DagsterInstance | None = None
) -> tuple[str, Any]:
    """Materialize one source's partition (in this process); ``("ok", {step: result})`` or ``("failed", error)``."""
    result = dg.materialize(
        [source_files, *PER_SOURCE],
        selection=PER_SOURCE,
        partition_key=source_id,
        instance=instance if instance is not None else instance_for(Lake(settings.lake)),
        resources={"kbflow": _resource(settings, progress)},
        raise_on_error=False,
        run_config=_QUIET,
    )
    if not result.success:
        return "failed", _error(result)
    return "ok", {step: _result(result, step) for step in ("documents", "chunks", "embeddings")}


def _worker_init(lake_path: str) -> None:
    """A worker of an ingest run: the run holds the lake's lease for it; Dagster's warnings stay quiet."""
    os.environ["KBFLOW_LEASE_HELD"] = lake_path
    warnings.filterwarnings("ignore", module="dagster")


def _run(
    lake: Lake,
    settings: Settings,
    source_ids: list[str] | None,
    progress: bool,
    checks: bool,
    t0: float,
    workers: int = 1,
) -> IngestSummary:
    repaired = pipeline.repair_lake(lake)
    registered = [s.source_id for s in lake.sources()]
    ids = list(source_ids) if source_ids is not None else registered
    warnings.filterwarnings("ignore", module="dagster")
    instance = instance_for(lake)
    _sync_partitions(instance, set(registered))
    # what the sources hold now, as Dagster data versions: each partition materialized below records it as its
    # input, so a later change of a source's files marks exactly its partitions stale (in the UI, and for
    # automation)
    observe_sources(settings, instance)
    summary = IngestSummary([], {}, 0.0, repaired=repaired, engine={"name": settings.engine, "steps": {}})
    with _DagsterSteps(lake, settings, instance, ids, progress, checks, workers) as steps:
        return run_phases(lake, ids, steps, summary, t0)


class _DagsterSteps(Steps):
    """The assets, materialized in this process: each source's partition (side by side in ``workers``
    processes when a phase has several), then ``search_index`` with its checks after the last phase."""

    def __init__(self, lake, settings, instance, ids, progress, checks, workers) -> None:
        self.lake, self.settings, self.instance, self.progress, self.run_checks = (
            lake,
            settings,
            instance,
            progress,
            checks,
        )
        self.resources = {"kbflow": _resource(settings, progress)}
        self.bar = None
        if progress and ids:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=len(ids), desc="ingest", unit="source", file=sys.stderr)
        self.pool = None
        if workers > 1 and len(ids) > 1:
            import concurrent.futures
            import multiprocessing

            pipeline.create_source_tables(lake)  # no two workers may create one table
            self.pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=min(workers, len(ids)),
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_init,
                initargs=(lake.uri.removeprefix("file://"),),
            )
        self.result = None

    def __enter__(self) -> _DagsterSteps:
        return self

    def __exit__(self, *_exc: Any) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
        if self.bar is not None:
            self.bar.close()

    def _tick(self, sid: str, done: bool) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(sid)
            if done:
                self.bar.update(1)

    def sources(self, phase: Sequence[str]) -> Iterator[tuple[str, Outcome]]:
        if self.pool is not None and len(phase) > 1:
            futures = [self.pool.submit(_materialize_source, self.settings, sid, False) for sid in phase]
            outcomes = []
            for sid, future in zip(phase, futures, strict=True):
                try:
                    outcomes.append(future.result())
                except Exception as exc:  # a worker that died: the source failed, the others go on
                    outcomes.append(("failed", f"worker process failed: {type(exc).__name__}: {exc}"))
                self._tick(sid, done=True)
            # two sources may have added the same text's embedding at once: keep one before publishing
            pipeline.repair_lake(self.lake)
        else:
            outcomes = []
            for sid in phase:
                self._tick(sid, done=False)
                outcomes.append(_materialize_source(self.settings, sid, self.progress, self.instance))
                if self.bar is not None:
                    self.bar.update(1)
        for sid, (state, value) in zip(phase, outcomes, strict=True):
            if state != "ok":
                yield sid, value
                continue
            steps = (LoadResult, "documents"), (ChunkResult, "chunks"), (EmbedResult, "embeddings")
            yield sid, tuple(cls.from_dict(value[name]) for cls, name in steps)

    def publish(self, last: bool) -> tuple[Any, str | None]:
        self.result = dg.materialize(
            [search_index, *(CHECKS if self.run_checks and last else [])],
            instance=self.instance,
            resources=self.resources,
            raise_on_error=False,
            run_config=_QUIET,
        )
        if not self.result.success:
            return None, _error(self.result)
        return IndexResult.from_dict(_result(self.result, "search_index")), None

    def checks(self) -> list[dict[str, Any]]:
        return _check_summaries(self.result) if self.result is not None else []

    def claims(self) -> dict[str, Any] | None:
        if not self.lake.has_table(S.CLAIMS):
            return None
        claims = dg.materialize(
            [claims_evidence],
            instance=self.instance,
            resources=self.resources,
            raise_on_error=False,
            run_config=_QUIET,
        )
        if not claims.success:  # the claims' trouble is not the ingest's: reported beside it, never failing the run
            return {"error": _error(claims)}
        # the summary the local runner gives (the asset's table of stale claims stays in Dagster)
        return {k: v for k, v in _result(claims, "claims_evidence").items() if k != "details"}


def _check_summaries(result: dg.ExecuteInProcessResult) -> list[dict[str, Any]]:
    return [
        {"name": ev.check_name, "passed": ev.passed, "metadata": {k: v.value for k, v in ev.metadata.items()}}
        for ev in result.get_asset_check_evaluations()
    ]
