"""The whole flow: load → chunk → embed per source, then the search index and its checks.

Two runners produce the same :class:`~kbflow.pipeline.results.IngestSummary`:

- ``local``: :func:`ingest`, the steps called in this process, no orchestrator;
- ``dagster``: the Dagster assets materialized in this process (the
  ``kbflow_dagster`` package, found through the ``kbflow.runners`` entry point,
  so the library never imports Dagster).

:func:`run_ingest` picks one (``"auto"``: Dagster where it is installed) and is
what ``kbflow ingest`` calls.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from kbflow import schema as S
from kbflow._lazy import install_hint, missing, require
from kbflow.config import Settings
from kbflow.errors import ConfigError, KbflowError, LakeStorageError, SourceError, SourceNotFoundError
from kbflow.lake.lake import Lake, now
from kbflow.lake.lease import lease
from kbflow.lake.malloc import limit_malloc_arenas
from kbflow.lake.repair import repair_duplicates
from kbflow.lake.storage import storage_errors
from kbflow.pipeline.chunking import chunk_source
from kbflow.pipeline.embedding import embed_source
from kbflow.pipeline.engines import open_engine
from kbflow.pipeline.load import load_source
from kbflow.pipeline.progress import embed_bar, load_bar
from kbflow.pipeline.results import IngestSummary, Progress
from kbflow.pipeline.skeleton import Outcome, Steps, failed_report, plan_phases, run_phases

log = logging.getLogger("kbflow")

__all__ = [
    "RUNNERS_GROUP",
    "failed_report",
    "finish_index",
    "ingest",
    "plan_phases",
    "repair_lake",
    "runner_names",
    "run_ingest",
]

#: the entry-point group runners other than ``local`` register under
RUNNERS_GROUP = "kbflow.runners"

#: ``runner(settings, source_ids, *, progress, checks) -> IngestSummary``
Runner = Callable[..., IngestSummary]


def repair_lake(lake: Lake) -> dict[str, int]:
    """What every ingest run does first, holding the lease: bring old tables to the current schemas
    (:meth:`Lake.migrate`), then remove duplicate keys (returned, per table)."""
    lake.migrate()
    return repair_duplicates(lake)


#: the tables each source's steps write (load, chunk, embed)
SOURCE_TABLES = (S.DOCUMENTS, S.CHUNKS, S.EMBEDDINGS)


def create_source_tables(lake: Lake) -> None:
    """Create the tables the per-source steps write, where missing, before workers write them side by side.

    Two processes that find a table missing both create it, and one that
    finds the other's create half done (a folder, no version yet) replaces
    it: if the first had already committed its rows, they were gone, and its
    report still said they were added. Created here, once, no worker ever
    creates a table.
    """
    for name in SOURCE_TABLES:
        lake.table(name)


def finish_index(lake: Lake, settings: Settings):
    """Sync the search table, then mark every source that did not fail as indexed (one registry commit).

    A source some of whose files could not be read is marked ``partial``.
    """
    from kbflow.index.search import sync_search_table

    result = sync_search_table(lake, settings.vector_space)
    calibrate(lake, settings)
    pc = require("pyarrow.compute")
    counted = pc.value_counts(lake.scan(S.CHUNKS, [S.SOURCE_ID]).column(0))
    counts = dict(zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist()))
    stamp = now()
    updates = {
        s.source_id: {
            S.STATUS: S.PARTIAL if s.failed_files else S.INDEXED,
            S.CHUNK_COUNT: counts.get(s.source_id, 0),
            S.LAST_INDEXED: stamp,
        }
        for s in lake.sources()
        if s.status != S.FAILED
    }
    lake.set_status(updates)
    return result


def calibrate(lake: Lake, settings: Settings) -> dict[str, Any] | None:
    """Fit and store the "no good match" curve of the search table's new version (:func:`kbflow.retrieve.confidence.
    calibrate_lake`); a failure is logged and the lake keeps the model's built-in curve."""
    from kbflow.retrieve.confidence import calibrate_lake
    from kbflow.retrieve.retriever import Retriever

    if not lake.has_table(S.SEARCH):
        return None
    quiet = dataclasses.replace(settings, retrieval=dataclasses.replace(settings.retrieval, log_queries=False))
    try:
        return calibrate_lake(lake, Retriever.open(lake, settings=quiet))
    except KbflowError as exc:
        log.warning("the lake's no-answer curve was not fitted (%s); the model's built-in one is used", exc)
        return None


def check_claims(lake: Lake, settings: Settings, *, details: bool = False) -> dict[str, Any] | None:
    """Check the lake's claims against what it now holds (:meth:`kbflow.claims.Claims.check_evidence`, the
    lake only: it was just ingested); ``None`` when the lake has no claims. ``details`` adds, per stale
    claim, its status, text and what no longer holds (``"details"``)."""
    if not lake.has_table(S.CLAIMS):
        return None
    from kbflow.claims import Claims

    store = Claims.open(lake, settings=settings, actor=("system", "ingest"))
    report = store.check_evidence(against_sources=False)
    out = {
        "claims_checked": report.claims_checked,
        "evidence_checked": report.evidence_checked,
        "stale": sorted(report.stale),
        "newly_stale": report.newly_stale,
        "cleared": report.cleared,
        "unchecked": {cid: problems for cid, problems in report.unchecked.items()},
    }
    if details:
        out["details"] = [
            {"claim_id": c.claim_id, "status": c.status, "text": c.text, "stale": [x.to_dict() for x in c.stale]}
            for c in (store.get(cid) for cid in sorted(report.stale))
        ]
    return out


def confirmed_contradictions(lake: Lake, settings: Settings) -> list[dict[str, Any]]:
    """The contradictions a person confirmed whose two claims both still stand (neither superseded nor
    disputed): decided, but not resolved. Empty when the lake has no claims."""
    if not lake.has_table(S.CLAIMS):
        return []
    from kbflow.claims import Claims

    store = Claims.open(lake, settings=settings, actor=("system", "check"))
    return [c.to_dict() for c in store.conflicts(confirmed=True)]


def check_summaries(lake: Lake, settings: Settings) -> list[dict[str, Any]]:
    """Every data-quality check of :mod:`kbflow.pipeline.checks`, as summary dicts."""
    from kbflow.pipeline.checks import run_checks

    return [
        {"name": c.name, "passed": c.passed, "metadata": c.metadata} for c in run_checks(lake, settings.vector_space)
    ]


def ingest(
    lake: Lake | str | None = None,
    settings: Settings | None = None,
    source_ids: Iterable[str] | None = None,
    progress: Progress | bool | None = None,
    *,
    checks: bool = False,
    wait: float = 0.0,
) -> IngestSummary:
    """Run load → chunk → embed for each source, then the search index, in this process.

    This is what the Dagster assets do, minus Dagster. ``progress`` is a
    callback for the embed step, or ``True`` for progress bars on stderr. A failing source is
    reported (``status="failed"``) and the others go on. With ``checks``, the
    data-quality checks run after the index (as the Dagster runner's asset
    checks do). Claims whose cited text the lake no longer holds are then
    flagged (``summary.claims``; :mod:`kbflow.claims`).

    The run holds the lake's exclusive write lease (:mod:`kbflow.lake.lease`;
    a second writer waits up to ``wait`` seconds, then gets
    :class:`~kbflow.errors.LakeBusyError` naming the holder) and first repairs
    any duplicate keys the lake holds (:mod:`kbflow.lake.repair`; reported
    in ``summary.repaired``). It first caps glibc's malloc arenas
    (:func:`kbflow.lake.malloc.limit_malloc_arenas`), which keeps a long
    ingest's memory flat; call that yourself, or set ``MALLOC_ARENA_MAX=2``,
    before other work where you want it from the start.
    """
    t0 = time.perf_counter()
    limit_malloc_arenas()
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    settings = Settings.coerce(settings, lake=lake.uri)
    if settings.engine == "ray":  # the cluster, the lake and the model checked before anything is written
        open_engine(settings, lake)
    with lease(lake.uri, "kbflow ingest", wait=wait):
        repaired = repair_lake(lake)
        ids = list(source_ids) if source_ids is not None else [s.source_id for s in lake.sources()]
        summary = IngestSummary([], {}, 0.0, repaired=repaired, engine={"name": settings.engine, "steps": {}})
        return run_phases(lake, ids, _LocalSteps(lake, settings, progress, checks), summary, t0)


class _LocalSteps(Steps):
    """The library's steps, called in this process (``progress``: ``True`` for bars, or a callback)."""

    def __init__(self, lake: Lake, settings: Settings, progress: Progress | bool | None, checks: bool) -> None:
        self.lake, self.settings, self.progress, self.run_checks = lake, settings, progress, checks

    def sources(self, phase: Sequence[str]) -> Iterator[tuple[str, Outcome]]:
        bars = self.progress is True
        for sid in phase:
            try:
                with load_bar(sid, bars) as loading:
                    load = load_source(self.lake, sid, loading, settings=self.settings)
                chunk = chunk_source(self.lake, sid, self.settings)
                with embed_bar(sid, bars) as embedding:
                    callback = self.progress if callable(self.progress) else None
                    embed = embed_source(self.lake, sid, self.settings, embedding if bars else callback)
            except SourceError as exc:
                yield sid, str(exc)
                continue
            yield sid, (load, chunk, embed)

    def publish(self, last: bool) -> tuple[Any, str | None]:
        try:
            with storage_errors(self.lake.uri):
                return finish_index(self.lake, self.settings), None
        except LakeStorageError:
            raise  # the lake's storage, not the index: the whole run stops with it
        except KbflowError as exc:
            return None, str(exc)

    def checks(self) -> list[dict[str, Any]]:
        return check_summaries(self.lake, self.settings) if self.run_checks else []

    def claims(self) -> dict[str, Any] | None:
        try:
            return check_claims(self.lake, self.settings)
        except KbflowError as exc:  # the claims store's trouble, not the ingest's: reported beside it
            return {"error": str(exc)}


def _local(
    settings: Settings, source_ids: list[str] | None, *, progress: bool = False, checks: bool = True, wait: float = 0.0
):
    return ingest(Lake(settings.lake), settings, source_ids, progress or None, checks=checks, wait=wait)


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=RUNNERS_GROUP)}


def runner_names() -> list[str]:
    """The runners installed: ``local`` and every ``kbflow.runners`` entry point (``dagster``)."""
    return sorted({"local", *_entry_points()})


def _runner(name: str) -> Runner:
    """The runner ``name``; ``auto`` is Dagster where its extra is installed, else local."""
    if name == "local":
        return _local
    found = _entry_points()
    if name == "auto":
        try:
            return found["dagster"].load() if "dagster" in found else _local
        except ImportError:  # the code location is installed, Dagster itself is not (no `kbflow[dagster]`)
            log.warning(
                "Dagster is not installed (%s): ingesting with the local runner (--runner local says so)",
                install_hint("dagster"),
            )
            return _local
    if name not in found:
        raise ConfigError(f"unknown runner {name!r}; installed: {', '.join(runner_names())}")
    try:
        return found[name].load()
    except ImportError as exc:
        raise missing(found[name].module, exc) from exc


def _share_cluster(settings: Settings, lake: Lake) -> None:
    """Join (or start) the Ray cluster here, checked, and name it in ``RAY_ADDRESS`` so that a runner's worker
    processes join the same one instead of each starting its own."""
    import os

    engine = open_engine(settings, lake)
    if engine.address:
        os.environ.setdefault("RAY_ADDRESS", engine.address)


def run_ingest(
    settings: Settings,
    source_ids: Iterable[str] | None = None,
    *,
    runner: str = "auto",
    progress: bool = False,
    checks: bool = True,
    wait: float = 0.0,
    workers: int = 1,
) -> IngestSummary:
    """Ingest ``source_ids`` (default: every registered source) with a runner; what ``kbflow ingest`` does.

    ``runner`` is ``"local"`` (:func:`ingest` in this process), ``"dagster"``
    (the Dagster assets, in this process) or ``"auto"`` (Dagster where
    ``kbflow_dagster`` is installed, else local). Both report alike.
    ``workers`` > 1 (the Dagster runner) materializes that many sources side by
    side, each in a worker process. With ``settings.engine == "ray"`` every
    runner's steps run on the one Ray cluster joined (or started) here first.
    """
    lake = Lake(settings.lake)
    registered = [s.source_id for s in lake.sources()]
    ids = list(source_ids) if source_ids is not None else None
    unknown = sorted(set(ids or ()) - set(registered))
    if unknown:
        raise SourceNotFoundError(f"not registered in {lake.uri}: {', '.join(unknown)} (see `kbflow status`)")
    run = _runner(runner)
    if settings.engine == "ray":
        _share_cluster(settings, lake)
    if workers != 1:
        if run is _local:
            raise ConfigError(
                "--workers needs the dagster runner (--runner dagster, with kbflow's Dagster code location)"
            )
        return run(settings, ids, progress=progress, checks=checks, wait=wait, workers=workers)
    return run(settings, ids, progress=progress, checks=checks, wait=wait)
