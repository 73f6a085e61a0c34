"""kbflow's configuration: the settings of a run (:mod:`.settings`), the embedding models and backends
(:mod:`.models`), and every environment variable kbflow reads (:mod:`.env`, one table)."""

from __future__ import annotations

from kbflow.config.env import (
    DEFAULT_LAKE,
    DEFAULT_LOG_DAYS,
    SERVE_OPTIONS_ENV,
    VARIABLES,
    cache_dir,
    env_int,
    resolve_lake,
    serve_options,
)
from kbflow.config.models import (
    BACKENDS,
    DEFAULT_ALIASES,
    DEFAULT_BACKEND,
    DEFAULT_MODEL,
    ENGINES,
    OWN_SPACE,
    SPACES,
    check_backend,
    model_id_of,
    resolve_id,
    split_space,
)
from kbflow.config.settings import (
    CHUNKER_REVISION,
    EXACT_MAX_ROWS,
    FUSION_NAMES,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_RERANK_DEPTH,
    MODES,
    ChunkSettings,
    RetrievalSettings,
    Settings,
)

__all__ = [
    "BACKENDS",
    "CHUNKER_REVISION",
    "DEFAULT_ALIASES",
    "DEFAULT_BACKEND",
    "DEFAULT_LAKE",
    "DEFAULT_LOG_DAYS",
    "DEFAULT_MODEL",
    "ENGINES",
    "EXACT_MAX_ROWS",
    "FUSION_NAMES",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MAX_RERANK_DEPTH",
    "MODES",
    "OWN_SPACE",
    "SERVE_OPTIONS_ENV",
    "SPACES",
    "VARIABLES",
    "ChunkSettings",
    "RetrievalSettings",
    "Settings",
    "cache_dir",
    "check_backend",
    "env_int",
    "model_id_of",
    "resolve_id",
    "resolve_lake",
    "serve_options",
    "split_space",
]
