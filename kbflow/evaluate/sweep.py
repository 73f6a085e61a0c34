"""Sweep files: a YAML grid of retrieval settings, expanded into configurations.

::

    # sweep.yaml
    grid:
      mode: [hybrid]
      fusion: [rrf, convex]
      rrf_k: [10, 60]
      dense_weight: [0.5, 1.0]
      bm25_weight: [1.0]
    include:              # optional: configurations added as they are
      - {mode: dense}
      - {mode: bm25}

Keys: ``mode``, ``fusion``, ``rrf_k``, ``dense_weight``, ``bm25_weight``,
``depth_factor``, ``reranker`` (a cross-encoder folder or id; ``null`` for
none), ``rerank_depth`` (query time) and ``max_tokens``, ``model``,
``backend`` (``torch``, ``onnx``, ``onnx-int8``: the two first share vectors and a lake),
``context`` (the chunk context header, ``true``/``false``), ``tables`` (PDF
tables as their own units, ``true``/``false``) (ingest time: the lake is
re-chunked and the new chunk texts embedded once per model; a text already
embedded by that model never is again). A value or a list of
values; the grid is their cartesian product. Settings a mode does not use
(fusion settings for ``dense``/``bm25``, ``rerank_depth`` without a
reranker) are dropped, and duplicate
configurations kept once.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping
from typing import Any

from kbflow._lazy import require
from kbflow.config import DEFAULT_BACKEND, DEFAULT_MODEL, Settings
from kbflow.errors import ConfigError, DatasetError
from kbflow.evaluate.configs import CONFIG_KEYS, config_for, slug
from kbflow.evaluate.runs import config_key
from kbflow.records import ids

__all__ = ["config_label", "config_labels", "expand_grid", "load_sweep"]


def expand_grid(spec: dict[str, Any], settings: Settings, origin: str = "sweep") -> list[dict[str, Any]]:
    """Every configuration a sweep spec (``{"grid": {...}, "include": [...]}``) names, in order, each once."""
    if (
        not isinstance(spec, dict)
        or not (set(spec) <= {"grid", "include", "name"})
        or not spec.keys() & {"grid", "include"}
    ):
        raise DatasetError(f"{origin}: a sweep is a mapping with 'grid' (and optionally 'include'); got {spec!r:.200}")
    grid = spec.get("grid") or {}
    if not isinstance(grid, dict):
        raise DatasetError(f"{origin}: 'grid' must map setting names to a value or a list of values")
    unknown = set(grid) - set(CONFIG_KEYS)
    if unknown:
        raise DatasetError(f"{origin}: unknown settings {sorted(unknown)}; known: {', '.join(CONFIG_KEYS)}")
    keys = list(grid)
    values = [v if isinstance(v, list) else [v] for v in grid.values()]
    if any(not v for v in values):
        raise DatasetError(f"{origin}: a grid setting has an empty list of values")
    wanted = [dict(zip(keys, combo)) for combo in itertools.product(*values)] if keys else []
    include = spec.get("include") or []
    if not isinstance(include, list) or not all(isinstance(c, dict) for c in include):
        raise DatasetError(f"{origin}: 'include' must be a list of mappings")
    wanted += include
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, overrides in enumerate(wanted, start=1):
        try:
            config = config_for(settings, **overrides)
        except ConfigError as exc:
            raise DatasetError(f"{origin}: configuration {i} {overrides}: {exc}") from None
        key = config_key(config)
        if key not in seen:
            seen.add(key)
            out.append(config)
    return out


def load_sweep(path: str, settings: Settings) -> list[dict[str, Any]]:
    """Read a sweep YAML file and expand it (see the module docs)."""
    yaml = require("yaml")
    try:
        with open(path, encoding="utf-8") as fh:
            spec = yaml.safe_load(fh)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read the sweep file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise DatasetError(f"{path}: not valid YAML ({exc})") from None
    return expand_grid(spec, settings, origin=path)


def config_label(config: Mapping[str, Any]) -> str:
    """A short readable name of a configuration, e.g. ``hybrid_convex_d1-b0.5_x3_t200``.

    Names the mode, the fusion (``rrf60``/``convex``) and leg weights of a
    hybrid, the depth factor, the chunk budget, and the model and reranker
    where they are not the defaults. Letters, digits and ``._-`` only (usable
    as a Dagster partition key and a lake tag).
    """
    parts = [str(config["mode"])]
    if config["mode"] == "hybrid":
        parts.append(f"rrf{config['rrf_k']}" if config["fusion"] == "rrf" else str(config["fusion"]))
        parts.append(f"d{float(config['dense_weight']):g}-b{float(config['bm25_weight']):g}")
    parts.append(f"x{config['depth_factor']}")
    parts.append(f"t{config['max_tokens']}")
    if config["model"] != DEFAULT_MODEL:
        parts.append(f"m-{slug(config['model'])}")
    if config.get("backend", DEFAULT_BACKEND) != DEFAULT_BACKEND:
        parts.append(f"be-{config['backend']}")
    if config.get("reranker"):
        parts.append(f"rr-{slug(config['reranker'])}-{config['rerank_depth']}")
    if config.get("context") is False:
        parts.append("nocx")
    if config.get("tables") is False:
        parts.append("notab")
    return "_".join(parts)


def config_labels(configs: list[Mapping[str, Any]]) -> list[str]:
    """:func:`config_label` of each configuration, made unique (a short digest added where two collide)."""
    labels = [config_label(c) for c in configs]
    counts = Counter(labels)
    return [
        label if counts[label] == 1 else f"{label}_{ids.digest(config_key(c))[:6]}" for label, c in zip(labels, configs)
    ]
