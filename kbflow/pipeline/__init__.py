"""The ingest steps: load → chunk → embed per source, then the search index.

Each step reads what it needs from the lake and writes its table in one
atomic commit, so a step can be re-run at any time and converges: a crash
between steps leaves every table at a committed version, and the next run
finishes the work. Dagster assets call these functions one per asset;
:func:`ingest` runs them in-process without Dagster.

What each step skips:

- :func:`load_source`: a source whose fingerprint equals the one last loaded
  is not parsed at all (``status="unchanged"``).
- :func:`chunk_source`: only units whose hash is new are chunked; chunks of
  units that disappeared are deleted; a chunk whose text is unchanged keeps
  its ``chunk_id`` (and so its embedding).
- :func:`embed_source`: only chunk texts without a vector for the model are
  embedded, streamed in batches into one commit.

One module per step (:mod:`.load`, :mod:`.chunking`, :mod:`.embedding`),
source registration, removal and staleness (:mod:`.registration`), the whole flow and its
runners (:mod:`.run`), and the result records every runner reports
(:mod:`.results`).
"""

from __future__ import annotations

from kbflow.pipeline.chunking import chunk_source
from kbflow.pipeline.embedding import embed_source
from kbflow.pipeline.load import load_source
from kbflow.pipeline.registration import Registration, register_source, remove_source, rename_source, stale_sources
from kbflow.pipeline.results import (
    ChunkResult,
    EmbedResult,
    IngestSummary,
    LoadResult,
    Progress,
    RemoveResult,
    SourceReport,
    StaleSource,
    source_report,
    split_issues,
)
from kbflow.pipeline.run import (
    check_claims,
    confirmed_contradictions,
    create_source_tables,
    failed_report,
    finish_index,
    ingest,
    plan_phases,
    repair_lake,
    run_ingest,
    runner_names,
)

__all__ = [
    "ChunkResult",
    "EmbedResult",
    "IngestSummary",
    "LoadResult",
    "Progress",
    "Registration",
    "RemoveResult",
    "SourceReport",
    "StaleSource",
    "check_claims",
    "confirmed_contradictions",
    "create_source_tables",
    "chunk_source",
    "embed_source",
    "failed_report",
    "finish_index",
    "ingest",
    "load_source",
    "plan_phases",
    "repair_lake",
    "register_source",
    "remove_source",
    "rename_source",
    "run_ingest",
    "runner_names",
    "source_report",
    "split_issues",
    "stale_sources",
]
