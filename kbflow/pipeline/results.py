"""What each ingest step reports, and the one rule that turns step results into a source's report line.

Every runner (:func:`kbflow.pipeline.ingest` in this process, the Dagster
runner in ``kbflow_dagster``) builds its summary from these dataclasses, so
``kbflow ingest --json`` says the same whichever ran it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kbflow.records import StepResult

__all__ = [
    "ChunkResult",
    "EmbedResult",
    "IngestSummary",
    "LoadResult",
    "Progress",
    "RemoveResult",
    "SourceReport",
    "StaleSource",
    "source_report",
    "split_issues",
]

#: ``progress(done_now, total)``: called after each batch of work
Progress = Callable[[int, int], None]


@dataclass
class LoadResult(StepResult):
    source_id: str
    status: str  # new | updated | unchanged
    units: int = 0
    units_added: int = 0
    units_removed: int = 0
    #: files left out or not readable: ``{"path", "reason", "failed"}`` each
    issues: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    version: int | None = None
    seconds: float = 0.0
    #: where the step's work ran on a Ray cluster (``{"engine", "tasks", "nodes"}``); ``None``: in this process
    placement: dict[str, Any] | None = None


@dataclass
class ChunkResult(StepResult):
    source_id: str
    chunks: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_updated: int = 0
    units_chunked: int = 0
    version: int | None = None
    seconds: float = 0.0
    #: where the step's work ran on a Ray cluster (``{"engine", "tasks", "nodes"}``); ``None``: in this process
    placement: dict[str, Any] | None = None


@dataclass
class EmbedResult(StepResult):
    source_id: str
    model_id: str
    chunks_embedded: int = 0
    chunks_reused: int = 0
    version: int | None = None
    seconds: float = 0.0
    #: where the step's work ran on a Ray cluster (``{"engine", "tasks", "nodes"}``); ``None``: in this process
    placement: dict[str, Any] | None = None


@dataclass
class SourceReport(StepResult):
    """One source's line in the ``kbflow ingest --json`` summary.

    ``status`` is ``new``, ``updated``, ``unchanged``, ``partial`` (loaded,
    but some files could not be read: ``failed_files``) or ``failed``
    (nothing could be loaded: ``error``). ``skipped`` lists the files left out
    by a rule (size limit, file type, ignore rules); both lists hold
    ``{"path", "reason"}``.
    """

    source_id: str
    status: str
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    error: str | None = None
    skipped: list[dict[str, Any]] = field(default_factory=list)
    failed_files: list[dict[str, Any]] = field(default_factory=list)


def split_issues(issues: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(skipped, failed_files)`` of a source's issues, each as ``{"path", "reason"}``."""
    skipped: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for issue in issues or ():
        (failed if issue.get("failed") else skipped).append({"path": issue["path"], "reason": issue["reason"]})
    return skipped, failed


def source_report(load: LoadResult, chunk: ChunkResult, embed: EmbedResult) -> SourceReport:
    """One source's summary line from its three step results.

    An unchanged source whose chunks still changed (new chunk settings, a new
    model) was updated; a source with files that could not be read is partial.
    """
    status = load.status
    if status == "unchanged" and (chunk.chunks_added or chunk.chunks_removed or embed.chunks_embedded):
        status = "updated"
    skipped, failed = split_issues(load.issues)
    if failed:
        status = "partial"
    return SourceReport(
        load.source_id,
        status,
        chunk.chunks_added,
        chunk.chunks_removed,
        embed.chunks_embedded,
        skipped=skipped,
        failed_files=failed,
    )


@dataclass
class IngestSummary:
    """What an ingest did: one report per source, the search index, its checks, the table versions.

    :meth:`to_dict` is the ``kbflow ingest --json`` object.
    """

    sources: list[SourceReport]
    versions: dict[str, int]
    seconds: float
    #: the search-index step's result (an :class:`kbflow.index.search.IndexResult`), when it ran
    index: Any = None
    #: ``{"name", "passed", "metadata"}`` per check, when the checks ran
    checks: list[dict[str, Any]] = field(default_factory=list)
    #: why the search-index step failed (``None`` when it did not)
    index_error: str | None = None
    #: duplicate key rows the run found and removed first, per table (normally empty)
    repaired: dict[str, int] = field(default_factory=dict)
    #: the search-table version published after each phase (small sources first, then each big one alone)
    published: list[int] = field(default_factory=list)
    #: the claims check after the index (claims checked, ``stale`` and ``newly_stale`` claim ids); ``None``
    #: when the lake has no claims. Stale evidence is for a person to review: it does not make the run fail
    claims: dict[str, Any] | None = None
    #: where the steps ran (:mod:`kbflow.pipeline.engines`): ``{"name": the engine setting, "steps": {"load" |
    #: "chunk" | "embed": {"tasks", "nodes"}}}``, the Ray tasks and node ids of every source's step; a step that
    #: ran in this process only is not listed
    engine: dict[str, Any] = field(default_factory=lambda: {"name": "local", "steps": {}})

    def add_placement(self, load: LoadResult, chunk: ChunkResult, embed: EmbedResult) -> None:
        """Count where one source's three steps ran into :attr:`engine`."""
        steps = self.engine.setdefault("steps", {})
        for step, result in (("load", load), ("chunk", chunk), ("embed", embed)):
            if result.placement:
                seen = steps.setdefault(step, {"tasks": 0, "nodes": []})
                seen["tasks"] += result.placement["tasks"]
                seen["nodes"] = sorted(set(seen["nodes"]) | set(result.placement["nodes"]))

    @property
    def ok(self) -> bool:
        """No source failed or lost a file, the index was built, and every check passed."""
        return (
            not any(s.status in ("failed", "partial") for s in self.sources)
            and self.index_error is None
            and all(c["passed"] for c in self.checks)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": [s.to_dict() for s in self.sources],
            "versions": dict(self.versions),
            "seconds": round(self.seconds, 3),
            "checks": list(self.checks),
            "index_error": self.index_error,
            "repaired": dict(self.repaired),
            "published": list(self.published),
            "claims": self.claims,
            "engine": self.engine,
        }


@dataclass
class RemoveResult(StepResult):
    source_id: str
    registered: bool
    rows_removed: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)


@dataclass
class StaleSource(StepResult):
    source_id: str
    reason: str  # "changed" | "never indexed" | "failed" | "unreadable" | "not published"
    detail: str | None = None
    #: the source's fingerprint now, where it was taken ("changed"; "failed" and "not published" too)
    fingerprint: str | None = None
