"""The corpus assets: documents → chunks → embeddings per source, then the search index.

Each asset body is one call into :mod:`kbflow.pipeline`; the metadata it
records is what that step reports (rows written, rows skipped, versions,
seconds), plus the whole result under ``result`` so a runner can rebuild it
(:func:`kbflow_dagster.ingest.run_ingest`).
"""

# no `from __future__ import annotations` here: Dagster inspects the context type hints at runtime

import dataclasses
import logging
import warnings

import dagster as dg

from kbflow import pipeline
from kbflow.errors import KbflowError
from kbflow.lake.lease import lease
from kbflow.lake.storage import storage_errors
from kbflow.pipeline import checks as kchecks
from kbflow.pipeline.progress import embed_bar, load_bar
from kbflow_dagster.resources import KbflowResource

#: the metadata key holding a step's whole result (a dict of its dataclass)
RESULT = "result"
#: the failure metadata key naming the kbflow error class behind a failed step
ERROR_KIND = "kbflow_error"


def _metadata(result, **extra) -> dict:
    """A step result (a kbflow dataclass) as materialization metadata."""
    meta = {}
    for key, value in dataclasses.asdict(result).items():
        if key == "placement" and value:  # where the step ran on a Ray cluster: its tasks and nodes
            meta["ray_tasks"], meta["ray_nodes"] = value["tasks"], len(value["nodes"])
        if key == "source_id" or value is None or isinstance(value, dict):
            continue
        if isinstance(value, list):
            continue
        meta["table_version" if key == "version" else key] = round(value, 3) if isinstance(value, float) else value
    meta[RESULT] = dg.MetadataValue.json(dataclasses.asdict(result))
    meta.update(extra)
    return meta


def _step(fn, lake, *args, exclusive: bool = False, wait: float = 600.0, **kwargs):
    """Call a kbflow step on ``lake`` holding the lake's write lease (shared: per-source steps of several
    sources may run side by side; exclusive: the search index); a kbflow error becomes a
    :class:`dagster.Failure` whose description is kbflow's message."""
    try:  # a full disk or read-only lake: one line naming the lake and the cause
        with storage_errors(lake.uri), lease(lake.uri, f"dagster asset {fn.__name__}", exclusive=exclusive, wait=wait):
            return fn(lake, *args, **kwargs)
    except KbflowError as exc:
        raise dg.Failure(description=str(exc), metadata={ERROR_KIND: type(exc).__name__}) from exc


#: the tag an observation's data version is recorded under (Dagster's own)
DATA_VERSION_TAG = "dagster/data_version"

#: One partition per registered source; kept in step with the lake's registry.
sources_partitions = dg.DynamicPartitionsDefinition(name="sources")


def fingerprints(lake, source_ids=None) -> dict:
    """``{source id: DataVersion}``: each source's fingerprint now (its files' bytes, as ``kbflow status --stale``
    computes it; nothing is parsed). A source that cannot be read gets no version (and a logged warning)."""
    from kbflow.errors import KbflowError
    from kbflow.pipeline.registration import source_fingerprint

    out = {}
    for source in lake.sources(source_ids):
        try:
            out[source.source_id] = dg.DataVersion(source_fingerprint(lake, source))
        except KbflowError as exc:
            logging.getLogger("kbflow.dagster").warning("%s: cannot fingerprint the source (%s)", source.source_id, exc)
    return out


def _observe_sources(kbflow: KbflowResource) -> dg.DataVersionsByPartition:
    lake = kbflow.open_lake()
    return dg.DataVersionsByPartition(fingerprints(lake) if lake.has_table("sources") else {})


with warnings.catch_warnings():  # observable source assets are "beta" in Dagster 1.13; the API is the documented one
    warnings.simplefilter("ignore", dg.BetaWarning)
    source_files = dg.observable_source_asset(
        name="source_files",
        partitions_def=sources_partitions,
        group_name="corpus",
        description="The registered sources' files as they are now: one data version per source, its fingerprint. "
        "When a source's files change, its partitions downstream show as stale.",
    )(_observe_sources)


def _versions() -> tuple[str, str]:
    """Code versions of ``chunks`` and ``embeddings``: the chunker (its revision and default settings) and the
    model's vector space, as configured where the code location loads (a change marks every partition stale)."""
    from kbflow.config import ChunkSettings, Settings

    try:
        space = Settings().vector_space
    except Exception:  # a bad $KBFLOW_BACKEND: reported when a run starts, not at load
        space = "unknown"
    return ChunkSettings().fingerprint(), space


CHUNKER_VERSION, MODEL_VERSION = _versions()


@dg.asset(
    partitions_def=sources_partitions,
    group_name="corpus",
    deps=[source_files],
    description="Raw units (files, records) of one source, loaded unless its bytes are unchanged. Its data version "
    "is the source's fingerprint as loaded.",
)
def documents(context: dg.AssetExecutionContext, kbflow: KbflowResource) -> dg.MaterializeResult:
    lake = kbflow.open_lake()
    with load_bar(context.partition_key, kbflow.progress) as progress:
        result = _step(pipeline.load_source, lake, context.partition_key, progress, settings=kbflow.settings())
    skipped, failed = pipeline.split_issues(result.issues)
    if skipped:
        context.log.warning(f"left out {len(skipped)} files: {'; '.join(_line(i) for i in skipped[:10])}")
    if failed:
        context.log.error(f"could not read {len(failed)} files: {'; '.join(_line(i) for i in failed[:10])}")
    loaded = lake.get_source(context.partition_key).loaded_hash
    return dg.MaterializeResult(
        metadata=_metadata(
            result,
            files_left_out=len(skipped),
            files_unreadable=len(failed),
            issues=_issues_table(result.issues),
        ),
        data_version=dg.DataVersion(loaded) if loaded else None,
    )


def _line(issue: dict) -> str:
    return f"{issue['path']} ({issue['reason']})"


def _issues_table(issues: list[dict]) -> dg.TableMetadataValue:
    """Every file the load left out or could not read, as a table in the Dagster UI."""
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("path", "string"),
            dg.TableColumn("reason", "string"),
            dg.TableColumn("unreadable", "bool"),
        ]
    )
    records = [
        dg.TableRecord({"path": i["path"], "reason": i["reason"], "unreadable": bool(i.get("failed"))}) for i in issues
    ]
    return dg.MetadataValue.table(records=records, schema=schema)


@dg.asset(
    partitions_def=sources_partitions,
    group_name="corpus",
    deps=[documents],
    code_version=CHUNKER_VERSION,
    description="Structure-aware chunks of one source; unchanged units are not re-chunked.",
)
def chunks(context: dg.AssetExecutionContext, kbflow: KbflowResource) -> dg.MaterializeResult:
    result = _step(pipeline.chunk_source, kbflow.open_lake(), context.partition_key, kbflow.settings())
    return dg.MaterializeResult(metadata=_metadata(result))


@dg.asset(
    partitions_def=sources_partitions,
    group_name="corpus",
    deps=[chunks],
    code_version=MODEL_VERSION,
    description="One vector per distinct chunk text per model; texts already embedded are never embedded again.",
)
def embeddings(context: dg.AssetExecutionContext, kbflow: KbflowResource) -> dg.MaterializeResult:
    with embed_bar(context.partition_key, kbflow.progress) as progress:
        result = _step(pipeline.embed_source, kbflow.open_lake(), context.partition_key, kbflow.settings(), progress)
    return dg.MaterializeResult(metadata=_metadata(result))


@dg.asset(
    group_name="corpus",
    deps=[embeddings],
    # publish once the partitions it depends on updated and none is still running (kbflow_automation evaluates it)
    automation_condition=dg.AutomationCondition.eager(),
    description="Chunks joined with the active model's vectors, with BM25, scalar and vector indexes "
    "covering every row.",
)
def search_index(context: dg.AssetExecutionContext, kbflow: KbflowResource) -> dg.MaterializeResult:
    lake = kbflow.open_lake()
    result = _step(pipeline.finish_index, lake, kbflow.settings(), exclusive=True)
    sources = lake.sources()
    return dg.MaterializeResult(
        metadata=_metadata(
            result,
            table_versions=dg.MetadataValue.json(lake.versions()),
            sources=_sources_table(sources),
            summary=dg.MetadataValue.md(_summary(sources, lake.versions())),
        )
    )


def _sources_table(sources) -> dg.TableMetadataValue:
    """Every registered source with its status and chunk count, as a table in the Dagster UI."""
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("source_id", "string"),
            dg.TableColumn("type", "string"),
            dg.TableColumn("scope", "string"),
            dg.TableColumn("status", "string"),
            dg.TableColumn("chunks", "int"),
            dg.TableColumn("files_left_out", "int"),
            dg.TableColumn("last_error", "string"),
        ]
    )
    records = [
        dg.TableRecord(
            {
                "source_id": s.source_id,
                "type": s.source_type,
                "scope": s.scope,
                "status": s.status,
                "chunks": int(s.chunk_count or 0),
                "files_left_out": len(s.skipped) + len(s.failed_files),
                "last_error": s.last_error or "",
            }
        )
        for s in sources
    ]
    return dg.MetadataValue.table(records=records, schema=schema)


def _summary(sources, versions: dict) -> str:
    """The index in a few Markdown lines: sources by status, chunks, what failed."""
    by_status: dict[str, int] = {}
    for s in sources:
        by_status[s.status] = by_status.get(s.status, 0) + 1
    lines = [
        f"**{sum(int(s.chunk_count or 0) for s in sources):,} chunks** from {len(sources)} sources "
        f"({', '.join(f'{n} {status}' for status, n in sorted(by_status.items()))}); search table "
        f"v{versions.get('search', '?')}."
    ]
    lines += [f"- `{s.source_id}` failed: {s.last_error}" for s in sources if s.status == "failed"]
    return "\n".join(lines)


def _check(result: kchecks.CheckResult, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR):
    """A kbflow check as a Dagster check result: ERROR for what makes search answers wrong, WARN for a
    sample that can also fail because sources changed after they were indexed."""
    return dg.AssetCheckResult(
        passed=result.passed, metadata=result.metadata, description=result.description, severity=severity
    )


@dg.asset_check(asset=search_index, description="Every chunk has an embedding for the active model.")
def embeddings_cover_chunks(kbflow: KbflowResource) -> dg.AssetCheckResult:
    return _check(kchecks.check_embeddings(kbflow.open_lake(), kbflow.settings().vector_space))


@dg.asset_check(asset=search_index, description="The search table holds exactly the current chunks.")
def search_matches_chunks(kbflow: KbflowResource) -> dg.AssetCheckResult:
    return _check(kchecks.check_search_matches_chunks(kbflow.open_lake()))


@dg.asset_check(asset=search_index, description="Every index of the search table covers every row.")
def indexes_cover_rows(kbflow: KbflowResource) -> dg.AssetCheckResult:
    return _check(kchecks.check_index_coverage(kbflow.open_lake()))


@dg.asset_check(asset=search_index, description="Sampled chunk locators resolve back to their text.")
def locators_resolve(kbflow: KbflowResource) -> dg.AssetCheckResult:
    return _check(kchecks.check_locators(kbflow.open_lake()), dg.AssetCheckSeverity.WARN)


@dg.asset_check(asset=search_index, description="No two rows of any table share a key.")
def keys_unique(kbflow: KbflowResource) -> dg.AssetCheckResult:
    return _check(kchecks.check_keys_unique(kbflow.open_lake()))


PER_SOURCE = [documents, chunks, embeddings]
CHECKS = [embeddings_cover_chunks, search_matches_chunks, indexes_cover_rows, locators_resolve, keys_unique]
