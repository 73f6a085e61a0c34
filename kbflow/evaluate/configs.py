"""What an evaluation run is configured with: its settings, what it needs at ingest time, how it ranks.

A configuration is a flat dict (:func:`config_for`): the retrieval settings,
applied at query time (:data:`RETRIEVAL_KEYS`, passed to
:meth:`kbflow.Retriever.rank` by :func:`rank_options`), and the ingest
settings the lake must be built with (:data:`INGEST_KEYS`). Configurations
that need the same lake form one ingest group (:func:`group_key`), so a
sweep syncs the lake once per group, not once per configuration.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from kbflow.config import RetrievalSettings, Settings
from kbflow.errors import ConfigError

__all__ = [
    "CONFIG_KEYS",
    "INGEST_KEYS",
    "RETRIEVAL_KEYS",
    "Group",
    "config_for",
    "group_key",
    "ingest_groups",
    "rank_options",
    "settings_for",
    "slug",
]

#: the settings a configuration names; the retrieval keys apply at query time, the ingest keys when the lake is built
RETRIEVAL_KEYS = (
    "mode",
    "fusion",
    "rrf_k",
    "dense_weight",
    "bm25_weight",
    "names_weight",
    "symbol_first",
    "min_depth",
    "depth_factor",
    "reranker",
    "rerank_depth",
    "document_weight",
    "page_weight",
    "role_weight",
    "feedback",
    "glossary",
)


#: ``context``: the chunk context header on or off; ``tables``: PDF tables as their own units, or not looked for;
#: ``backend``: what runs the model (``onnx-int8`` vectors are their own; ``torch`` and ``onnx`` share a lake)
INGEST_KEYS = ("model", "backend", "max_tokens", "context", "tables")


CONFIG_KEYS = (*RETRIEVAL_KEYS, *INGEST_KEYS)


def slug(name: str) -> str:
    """A model path or id as a short name: its last path part, then only letters, digits, '.' and '-'."""
    last = os.path.basename(str(name).rstrip("/")) or str(name)
    return re.sub(r"[^A-Za-z0-9.]+", "-", last).strip("-") or "model"


def config_for(settings: Settings, **overrides: Any) -> dict[str, Any]:
    """The full configuration dict of a run: every retrieval setting, the chunk budget and the model.

    Raises
    ------
    ConfigError
        An unknown key or a value the settings reject.
    """
    unknown = set(overrides) - set(CONFIG_KEYS)
    if unknown:
        raise ConfigError(f"unknown configuration keys {sorted(unknown)}; known: {', '.join(CONFIG_KEYS)}")
    r = settings.retrieval
    config: dict[str, Any] = {key: getattr(r, key) for key in RETRIEVAL_KEYS}
    config["max_tokens"] = settings.chunking.max_tokens
    config["model"] = settings.model
    config["backend"] = settings.backend
    config["context"] = settings.chunking.context
    config["tables"] = True
    config.update({k: v for k, v in overrides.items() if v is not None})
    RetrievalSettings(**{k: config[k] for k in RETRIEVAL_KEYS})  # validates
    if config["mode"] != "hybrid":  # fusion settings do not apply: keep configs comparable
        for key in ("fusion", "rrf_k", "dense_weight", "bm25_weight"):
            config[key] = None
        if config["mode"] == "dense":
            config["names_weight"] = None
    elif config["fusion"] == "convex":
        config["rrf_k"] = None
    if config["reranker"] is None:
        config["rerank_depth"] = None
    else:
        from kbflow.retrieve.rerank import reranker_id

        config["reranker"] = reranker_id(config["reranker"])
    return config


def settings_for(base: Settings, config: Mapping[str, Any]) -> Settings:
    """The ingest settings a configuration needs (its chunk budget and model)."""
    chunking = replace(base.chunking, max_tokens=int(config["max_tokens"]), context=bool(config.get("context", True)))
    if chunking.min_tokens >= chunking.max_tokens:
        chunking = replace(chunking, min_tokens=chunking.max_tokens // 4)
    backend = str(config.get("backend") or base.backend)
    return replace(base, model=str(config["model"]), backend=backend, chunking=chunking)


def rank_options(config: Mapping[str, Any], k: int) -> dict[str, Any]:
    """The :meth:`Retriever.rank` options of a configuration, every judged document counted (copies too)."""
    weights = {"dense": config["dense_weight"], "bm25": config["bm25_weight"]} if config["mode"] == "hybrid" else None
    return {
        "mode": config["mode"],
        "fusion": config["fusion"],
        "rrf_k": config["rrf_k"],
        "weights": weights,
        "names_weight": config.get("names_weight"),
        "symbol_first": config.get("symbol_first"),
        "min_depth": config.get("min_depth"),
        "depth": int(config["depth_factor"]) * k,
        "reranker": config.get("reranker") or False,
        "rerank_depth": config.get("rerank_depth"),
        "document_weight": config.get("document_weight"),
        "page_weight": config.get("page_weight"),
        "role_weight": config.get("role_weight"),
        "feedback": config.get("feedback"),
        "glossary": config.get("glossary") or "none",
        "distinct": False,  # every judged document counts, copies included, as BEIR scores them
    }


#: what a configuration needs at ingest time: ``(model, max_tokens, context, tables)``
Group = tuple[str, int, bool, bool]


def group_key(config: Mapping[str, Any]) -> Group:
    """What a configuration needs at ingest time: ``(model, max_tokens, context, tables)``; the model carries
    ``#onnx-int8.3`` when its backend gives vectors of their own (``torch`` and ``onnx`` configurations share one)."""
    from kbflow.config import SPACES

    model, backend = str(config["model"]), config.get("backend")
    return (
        f"{model}#{SPACES[backend]}" if backend in SPACES and not model.startswith("hash:") else model,
        int(config["max_tokens"]),
        bool(config.get("context", True)),
        bool(config.get("tables", True)),
    )


def ingest_groups(configs: Iterable[Mapping[str, Any]]) -> dict[Group, list[Mapping[str, Any]]]:
    """Configurations grouped by what they need at ingest time (:func:`group_key`)."""
    groups: dict[Group, list[Mapping[str, Any]]] = {}
    for config in configs:
        groups.setdefault(group_key(config), []).append(config)
    return groups
