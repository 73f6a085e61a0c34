"""Retrieval evaluation: BEIR datasets, ranx metrics, stored runs, comparisons with a paired test, and sweeps.

The names below load on first use, so ``kbflow --help`` (which registers the
``eval`` command) does not import numpy or pyarrow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "METRICS",
    "BeirDataset",
    "PairedTest",
    "EvalRun",
    "Headroom",
    "QueryDelta",
    "compare",
    "config_for",
    "eval_lake_uri",
    "evaluate",
    "evaluate_dataset",
    "expand_grid",
    "fusion_headroom",
    "fusion_variants",
    "load_beir",
    "load_runs",
    "load_sweep",
    "paired_runs",
    "paired_test",
    "ingest_dataset",
    "save_runs",
    "score_run",
]

_MODULES = {
    "kbflow.evaluate.beir": ("BeirDataset", "load_beir"),
    "kbflow.evaluate.configs": ("config_for",),
    "kbflow.evaluate.evaluate": ("evaluate", "evaluate_dataset"),
    "kbflow.evaluate.lakes": ("eval_lake_uri", "ingest_dataset"),
    "kbflow.evaluate.headroom": ("Headroom", "fusion_headroom", "fusion_variants"),
    "kbflow.evaluate.metrics": ("METRICS", "score_run"),
    "kbflow.evaluate.paired": ("PairedTest", "paired_runs", "paired_test"),
    "kbflow.evaluate.runs": ("EvalRun", "QueryDelta", "compare", "load_runs", "save_runs"),
    "kbflow.evaluate.sweep": ("expand_grid", "load_sweep"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kbflow.evaluate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover
    from kbflow.evaluate.beir import BeirDataset, load_beir
    from kbflow.evaluate.configs import config_for
    from kbflow.evaluate.evaluate import evaluate, evaluate_dataset
    from kbflow.evaluate.headroom import Headroom, fusion_headroom, fusion_variants
    from kbflow.evaluate.lakes import eval_lake_uri, ingest_dataset
    from kbflow.evaluate.metrics import METRICS, score_run
    from kbflow.evaluate.paired import PairedTest, paired_runs, paired_test
    from kbflow.evaluate.runs import EvalRun, QueryDelta, compare, load_runs, save_runs
    from kbflow.evaluate.sweep import expand_grid, load_sweep
