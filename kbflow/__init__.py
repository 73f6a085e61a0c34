"""kbflow: turn a messy corpus into cited, versioned, searchable knowledge.

>>> from kbflow import Retriever                        # doctest: +SKIP
>>> r = Retriever.open("data/lake")                     # doctest: +SKIP
>>> for hit in r.search("where are ranks fused", k=5):  # doctest: +SKIP
...     print(hit.score, hit.citation.render(), hit.text[:80])

Importing kbflow is cheap: heavy dependencies (torch, lancedb, tree-sitter,
dagster) load on first use of the names that need them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> defining module (loaded on first attribute access)
_EXPORTS = {
    "Retriever": "kbflow.retrieve.retriever",
    "Lake": "kbflow.lake.lake",
    "Settings": "kbflow.config",
    "ChunkSettings": "kbflow.config",
    "RetrievalSettings": "kbflow.config",
    "Source": "kbflow.records",
    "RawUnit": "kbflow.records",
    "Chunk": "kbflow.records",
    "Locator": "kbflow.records",
    "Citation": "kbflow.records",
    "Hit": "kbflow.records",
    "Hits": "kbflow.records",
    "resolve": "kbflow.retrieve.resolver",
    "rrf": "kbflow.retrieve.fusion",
    "convex": "kbflow.retrieve.fusion",
    "Ranking": "kbflow.retrieve.ranking",
    "Reranker": "kbflow.retrieve.rerank",
    "CrossEncoderReranker": "kbflow.retrieve.rerank",
    "load_beir": "kbflow.evaluate.beir",
    "evaluate_dataset": "kbflow.evaluate.evaluate",
    "EvalRun": "kbflow.evaluate.runs",
    "load_runs": "kbflow.evaluate.runs",
    "compare_runs": "kbflow.evaluate.runs",
    "paired_runs": "kbflow.evaluate.paired",
    "DatasetError": "kbflow.errors",
    "ingest": "kbflow.pipeline",
    "run_ingest": "kbflow.pipeline",
    "IngestSummary": "kbflow.pipeline",
    "SearchOptions": "kbflow.retrieve.request",
    "remove_source": "kbflow.pipeline",
    "stale_sources": "kbflow.pipeline",
    "limit_malloc_arenas": "kbflow.lake.malloc",
    "chunk_unit": "kbflow.chunk.base",
    "get_embedder": "kbflow.embed.base",
    "get_loader": "kbflow.sources.base",
    "KbflowError": "kbflow.errors",
    "ConfigError": "kbflow.errors",
    "SourceError": "kbflow.errors",
    "SourceNotFoundError": "kbflow.errors",
    "LakeBusyError": "kbflow.errors",
    "LakeError": "kbflow.errors",
    "LakeNotFoundError": "kbflow.errors",
    "LakeStorageError": "kbflow.errors",
    "EmbedError": "kbflow.errors",
    "QueryError": "kbflow.errors",
    "ResolveError": "kbflow.errors",
    "StaleCitationError": "kbflow.errors",
    "MissingDependencyError": "kbflow.errors",
    "AuthError": "kbflow.errors",
    "AccessDeniedError": "kbflow.errors",
    "NotFoundError": "kbflow.errors",
    "OverloadedError": "kbflow.errors",
    "SourceConflictError": "kbflow.errors",
    "UnsafeFileError": "kbflow.errors",
    "VersionNotFoundError": "kbflow.errors",
    "Client": "kbflow.service.client",
    "Service": "kbflow.service.core",
    "insights": "kbflow.usage.insights",
    "Insights": "kbflow.usage.insights",
    "ApiKey": "kbflow.usage.keys",
    "create_key": "kbflow.usage.keys",
    "list_keys": "kbflow.usage.keys",
    "revoke_key": "kbflow.usage.keys",
    "Claims": "kbflow.claims",
    "Claim": "kbflow.claims",
    "Evidence": "kbflow.claims",
    "ClaimError": "kbflow.errors",
    "ClaimTransitionError": "kbflow.errors",
}

__all__ = [
    "AccessDeniedError",
    "ApiKey",
    "AuthError",
    "Chunk",
    "ChunkSettings",
    "Citation",
    "Claim",
    "ClaimError",
    "ClaimTransitionError",
    "Claims",
    "Client",
    "ConfigError",
    "CrossEncoderReranker",
    "DatasetError",
    "EmbedError",
    "EvalRun",
    "Evidence",
    "Hit",
    "Hits",
    "IngestSummary",
    "Insights",
    "KbflowError",
    "Lake",
    "LakeBusyError",
    "LakeError",
    "LakeNotFoundError",
    "LakeStorageError",
    "Locator",
    "MissingDependencyError",
    "NotFoundError",
    "OverloadedError",
    "QueryError",
    "Ranking",
    "RawUnit",
    "Reranker",
    "ResolveError",
    "RetrievalSettings",
    "Retriever",
    "SearchOptions",
    "Service",
    "Settings",
    "Source",
    "SourceConflictError",
    "SourceError",
    "SourceNotFoundError",
    "StaleCitationError",
    "UnsafeFileError",
    "VersionNotFoundError",
    "chunk_unit",
    "compare_runs",
    "convex",
    "create_key",
    "evaluate_dataset",
    "get_embedder",
    "get_loader",
    "ingest",
    "insights",
    "limit_malloc_arenas",
    "list_keys",
    "load_beir",
    "load_runs",
    "paired_runs",
    "remove_source",
    "resolve",
    "revoke_key",
    "rrf",
    "run_ingest",
    "stale_sources",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kbflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    if name in ("Hit", "Hits"):
        importlib.import_module("kbflow.records.render")  # hits draw themselves in notebooks (records.hits.FIGURES)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover
    from kbflow.chunk.base import chunk_unit
    from kbflow.claims import Claim, Claims, Evidence
    from kbflow.config import ChunkSettings, RetrievalSettings, Settings
    from kbflow.embed.base import get_embedder
    from kbflow.errors import (
        AccessDeniedError,
        AuthError,
        ClaimError,
        ClaimTransitionError,
        ConfigError,
        DatasetError,
        EmbedError,
        KbflowError,
        LakeBusyError,
        LakeError,
        LakeNotFoundError,
        LakeStorageError,
        MissingDependencyError,
        NotFoundError,
        OverloadedError,
        QueryError,
        ResolveError,
        SourceConflictError,
        SourceError,
        SourceNotFoundError,
        StaleCitationError,
        UnsafeFileError,
        VersionNotFoundError,
    )
    from kbflow.evaluate.beir import load_beir
    from kbflow.evaluate.evaluate import evaluate_dataset
    from kbflow.evaluate.paired import paired_runs
    from kbflow.evaluate.runs import EvalRun, compare_runs, load_runs
    from kbflow.lake.lake import Lake
    from kbflow.lake.malloc import limit_malloc_arenas
    from kbflow.pipeline import IngestSummary, ingest, remove_source, run_ingest, stale_sources
    from kbflow.records import Chunk, Citation, Hit, Hits, Locator, RawUnit, Source
    from kbflow.retrieve.fusion import convex, rrf
    from kbflow.retrieve.ranking import Ranking
    from kbflow.retrieve.request import SearchOptions
    from kbflow.retrieve.rerank import CrossEncoderReranker, Reranker
    from kbflow.retrieve.resolver import resolve
    from kbflow.retrieve.retriever import Retriever
    from kbflow.service.client import Client
    from kbflow.service.core import Service
    from kbflow.sources.base import get_loader
    from kbflow.usage.insights import Insights, insights
    from kbflow.usage.keys import ApiKey, create_key, list_keys, revoke_key
