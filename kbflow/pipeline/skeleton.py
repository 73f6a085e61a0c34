"""One skeleton for an ingest, whatever runs its steps: the phases, the reports, publishing, checks, claims.

Both runners (:func:`kbflow.pipeline.ingest`, the steps in this process, and
``kbflow_dagster``'s assets) call :func:`run_phases` with what they do
differently, as a :class:`Steps`: how a phase's sources are loaded, chunked
and embedded, how the search table is published, how the checks and the
claims run. The skeleton does the rest the same way for both: it repairs
the lake first, plans the phases (big sources last, :func:`plan_phases`),
turns each source's outcome into its report, publishes after every phase
(so what is ready is searchable before a big source starts), runs the
checks after the last, checks the claims when the index stands, and fills
the :class:`~kbflow.pipeline.results.IngestSummary`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from kbflow.errors import KbflowError
from kbflow.lake.lake import Lake
from kbflow.pipeline.results import (
    ChunkResult,
    EmbedResult,
    IngestSummary,
    LoadResult,
    SourceReport,
    source_report,
    split_issues,
)

__all__ = ["BIG_SOURCE_BYTES", "Outcome", "Steps", "failed_report", "plan_phases", "run_phases"]

#: a source's outcome: its three step results, or the error that failed it
Outcome = tuple[LoadResult, ChunkResult, EmbedResult] | str


#: a source estimated to read more than this (text bytes; a PDF's bytes count an eighth) is ingested after the
#: others, which are published first: one huge source never holds up the rest
BIG_SOURCE_BYTES = 32 << 20


def plan_phases(lake: Lake, source_ids: list[str]) -> list[list[str]]:
    """The sources in the order to ingest them, cut where the search index is published.

    Sources estimated small come first, in their order, and are published
    together; each big source (:data:`BIG_SOURCE_BYTES`) follows, smallest
    first, and is published on its own. With no big source: one phase (an
    empty one when there is no source: the index is still brought up to date).
    """
    from kbflow.sources.base import get_loader

    sizes = {}
    for source in lake.sources(source_ids):
        try:
            sizes[source.source_id] = get_loader(source.source_type).estimate_bytes(source)
        except KbflowError:
            sizes[source.source_id] = 0
    small = [sid for sid in source_ids if sizes.get(sid, 0) <= BIG_SOURCE_BYTES]
    big = sorted((sid for sid in source_ids if sizes.get(sid, 0) > BIG_SOURCE_BYTES), key=lambda sid: sizes[sid])
    phases = [small] if small else []
    return phases + [[sid] for sid in big] or [[]]  # no source at all: one empty phase still publishes


def failed_report(lake: Lake, source_id: str, fallback: str) -> SourceReport:
    """A failed source's report line: the error the failing step recorded in the registry, else ``fallback``."""
    found = lake.sources([source_id])
    error = found[0].last_error if found and found[0].last_error else fallback
    skipped, failed = split_issues(found[0].issues if found else ())
    return SourceReport(source_id, "failed", error=error, skipped=skipped, failed_files=failed)


class Steps(ABC):
    """What a runner supplies to :func:`run_phases`."""

    @abstractmethod
    def sources(self, phase: Sequence[str]) -> Iterator[tuple[str, Outcome]]:
        """Load, chunk and embed each source of a phase; yield ``(source id, outcome)`` as each ends."""

    @abstractmethod
    def publish(self, last: bool) -> tuple[Any, str | None]:
        """Sync the search table: ``(the index result, None)``, or ``(None, why it failed)`` (a failure of the
        lake's storage is raised instead: the whole run stops with it). ``last``: the run's last phase."""

    @abstractmethod
    def checks(self) -> list[dict[str, Any]]:
        """The data-quality checks' summaries (run after the last phase, where the index stands)."""

    @abstractmethod
    def claims(self) -> dict[str, Any] | None:
        """The claims' evidence checked against the new lake (``None`` without claims; ``{"error"}`` when the
        claims store fails: reported beside the ingest, never failing it)."""


def run_phases(lake: Lake, source_ids: Sequence[str], steps: Steps, summary: IngestSummary, t0: float) -> IngestSummary:
    """Run an ingest of ``source_ids`` with ``steps`` into ``summary`` (started at ``t0``) and return it."""
    phases = plan_phases(lake, list(source_ids))
    for n, phase in enumerate(phases, start=1):
        for sid, outcome in steps.sources(phase):
            if isinstance(outcome, str):
                summary.sources.append(failed_report(lake, sid, outcome))
                continue
            load, chunk, embed = outcome
            summary.sources.append(source_report(load, chunk, embed))
            summary.add_placement(load, chunk, embed)
        index, error = steps.publish(last=n == len(phases))
        summary.index_error = error
        if error is None:
            summary.index = index
            summary.published.append(index.version)
    if summary.index_error is None:
        summary.checks = steps.checks()
        summary.claims = steps.claims()
    summary.versions = lake.versions()
    summary.seconds = time.perf_counter() - t0
    return summary
