"""Retrieval evaluation: BEIR datasets, ranx metrics, stored runs, comparisons and sweeps."""

from kbflow.evaluate.beir import BeirDataset, load_beir
from kbflow.evaluate.evaluate import config_for, eval_lake_uri, evaluate, evaluate_dataset, prepare_lake
from kbflow.evaluate.metrics import METRICS, score_run
from kbflow.evaluate.runs import EvalRun, QueryDelta, compare, load_runs, save_runs
from kbflow.evaluate.sweep import expand_grid, load_sweep

__all__ = [
    "METRICS",
    "BeirDataset",
    "EvalRun",
    "QueryDelta",
    "compare",
    "config_for",
    "eval_lake_uri",
    "evaluate",
    "evaluate_dataset",
    "expand_grid",
    "load_beir",
    "load_runs",
    "load_sweep",
    "prepare_lake",
    "save_runs",
    "score_run",
]
