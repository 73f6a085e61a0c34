"""The load step: a source's raw units into ``documents``, unless its bytes are unchanged."""

from __future__ import annotations

import json
import time

from kbflow import schema as S
from kbflow.config import Settings
from kbflow.errors import KbflowError
from kbflow.lake import arrays
from kbflow.lake.lake import Lake
from kbflow.lake.malloc import releases_memory
from kbflow.lake.spill import Spill
from kbflow.pipeline.common import records_failure, source_filter
from kbflow.pipeline.engines import Engine, open_engine
from kbflow.pipeline.results import LoadResult
from kbflow.sources.base import LoadProgress, get_loader

__all__ = ["load_source"]


@releases_memory
@records_failure
def load_source(
    lake: Lake,
    source_id: str,
    progress: LoadProgress | None = None,
    *,
    settings: Settings | None = None,
    engine: Engine | None = None,
) -> LoadResult:
    """Load one source into ``documents`` (one commit), unless its bytes are unchanged.

    Units are spilled to a temporary Arrow stream as the loader yields them and
    committed from there, so memory does not grow with the size of the source.
    Files the loader left out or could not read are recorded in the registry
    (``issues``); the others are loaded. When nothing can be loaded the source
    is marked ``failed`` with the reason, a :class:`SourceError` is raised, and
    no table but the registry is touched. ``progress(files done, files in all,
    pages done)`` follows a long load. The files are read by ``engine`` (else
    :func:`~kbflow.pipeline.engines.open_engine` from ``settings``): on Ray, one
    task per file, their units committed here in the loader's order.
    """
    t0 = time.perf_counter()
    source = lake.get_source(source_id)
    loader = get_loader(source.source_type)
    loader.progress, loader.lake_uri = progress, lake.uri
    with Spill(S.DOCUMENTS_SCHEMA) as spill:
        fingerprint = loader.fingerprint(source)
        if fingerprint == (source.loaded_hash or source.content_hash):
            if source.status == S.FAILED:
                lake.set_status({source_id: {S.STATUS: S.PENDING, S.LAST_ERROR: None}})
            issues = [dict(i) for i in source.issues]
            return LoadResult(source_id, "unchanged", issues=issues, seconds=time.perf_counter() - t0)
        engine = engine or open_engine(Settings.coerce(settings, lake=lake.uri), lake, source)
        try:
            for row in engine.load_rows(loader, source):
                spill.append(row)
        except KbflowError:  # what was left out is recorded even when nothing could be loaded
            issues = [issue.to_dict() for issue in loader.issues]
            lake.set_status({source_id: {S.ISSUES: json.dumps(issues) if issues else None}})
            raise
        # unit hashes and keys checked in Arrow (tens of bytes each), not as Python sets
        distinct = spill.distinct_columns([S.UNIT_HASH, S.UNIT_KEY])
        if len(distinct[S.UNIT_KEY]) != spill.num_rows:  # a repeated key: the first unit is kept, the rest reported
            loader.issues += loader.duplicate_issues(source, spill.keep_first(S.UNIT_KEY))
            distinct = spill.distinct_columns([S.UNIT_HASH, S.UNIT_KEY])
        issues = [issue.to_dict() for issue in loader.issues]

        where = source_filter(source_id)
        new = distinct[S.UNIT_HASH]
        old = arrays.distinct(lake.scan(S.DOCUMENTS, [S.UNIT_HASH], where).column(0))
        added, removed = arrays.count_missing(new, old), arrays.count_missing(old, new)
        table = lake.table(S.DOCUMENTS)
        if not len(old) and len(new):
            lake.append(S.DOCUMENTS, spill.reader())
        elif added or removed:
            (
                table.merge_insert([S.SOURCE_ID, S.UNIT_HASH])
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(where)
                .execute(spill.reader())
            )
    # content_hash waits for the embed step: until then the source still counts as stale
    recorded = json.dumps(issues) if issues else None
    lake.set_status(
        {source_id: {S.LOADED_HASH: fingerprint, S.ISSUES: recorded, S.LAST_ERROR: None, S.STATUS: S.PENDING}}
    )
    return LoadResult(
        source_id,
        "new" if source.content_hash is None and source.loaded_hash is None else "updated",
        units=len(new),
        units_added=added,
        units_removed=removed,
        issues=issues,
        version=lake.table(S.DOCUMENTS).version,
        seconds=time.perf_counter() - t0,
        placement=engine.placement("load"),
    )
