"""Stored evaluation runs (the lake's ``eval_runs`` table) and per-query comparisons.

Every configuration evaluated is one row: the dataset, the search-table
version it was measured on, the whole configuration, the mean metrics, the
query latency, and per-query scores and top documents. Two runs can then be
compared later without re-running either (:func:`compare`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.errors import DatasetError
from kbflow.evaluate.metrics import METRICS
from kbflow.lake.lake import Lake, now
from kbflow.lake.sql import sql_str
from kbflow.records import ids

__all__ = ["EvalRun", "QueryDelta", "comparable", "compare", "compare_runs", "config_key", "load_runs", "save_runs"]


def config_key(config: Mapping[str, Any]) -> str:
    """A configuration as canonical JSON: equal configurations, equal keys (stored, compared, digested)."""
    return json.dumps(config, sort_keys=True)


@dataclass(frozen=True)
class EvalRun:
    """One configuration evaluated on one dataset, at one lake version."""

    dataset: str
    split: str
    corpus_hash: str
    lake_version: int
    config: dict[str, Any]
    metrics: dict[str, float]
    latency_ms: dict[str, float]
    queries: int
    per_query: dict[str, dict[str, float]] = field(repr=False)
    top_docs: dict[str, list[str]] = field(repr=False)
    lake_tag: str | None = None
    created_at: datetime = field(default_factory=now)
    run_id: str = ""

    def __post_init__(self) -> None:
        if not self.run_id:
            key = config_key(self.config)
            rid = ids.digest(self.dataset, self.split, str(self.lake_version), key, self.created_at.isoformat())[:12]
            object.__setattr__(self, "run_id", rid)

    @property
    def mode(self) -> str:
        return str(self.config.get("mode", ""))

    def to_json(self) -> dict[str, Any]:
        """The ``kbflow eval --json`` line."""
        return {
            "run_id": self.run_id,
            "dataset": self.dataset,
            "lake_version": self.lake_version,
            "lake_tag": self.lake_tag,
            "config": self.config,
            "metrics": self.metrics,
            "latency_ms": self.latency_ms,
            "queries": self.queries,
        }

    def to_row(self) -> dict[str, Any]:
        row = {
            S.RUN_ID: self.run_id,
            S.DATASET: self.dataset,
            S.SPLIT: self.split,
            S.CORPUS_HASH: self.corpus_hash,
            S.LAKE_VERSION: self.lake_version,
            S.LAKE_TAG: self.lake_tag,
            S.CONFIG: config_key(self.config),
            S.MODE: self.mode,
            "latency_p50_ms": self.latency_ms["p50"],
            "latency_p95_ms": self.latency_ms["p95"],
            S.QUERIES: self.queries,
            S.PER_QUERY: json.dumps(self.per_query, separators=(",", ":")),
            S.TOP_DOCS: json.dumps(self.top_docs, separators=(",", ":")),
            S.CREATED_AT: self.created_at,
        }
        row.update({col: self.metrics.get(m) for m, col in S.METRIC_COLUMNS.items()})
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> EvalRun:
        return cls(
            dataset=row[S.DATASET],
            split=row[S.SPLIT],
            corpus_hash=row[S.CORPUS_HASH],
            lake_version=row[S.LAKE_VERSION],
            lake_tag=row[S.LAKE_TAG],
            config=json.loads(row[S.CONFIG]),
            metrics={m: row[col] for m, col in S.METRIC_COLUMNS.items() if row.get(col) is not None},
            latency_ms={"p50": row["latency_p50_ms"], "p95": row["latency_p95_ms"]},
            queries=row[S.QUERIES],
            per_query=json.loads(row[S.PER_QUERY]),
            top_docs=json.loads(row[S.TOP_DOCS]),
            created_at=row[S.CREATED_AT],
            run_id=row[S.RUN_ID],
        )


def save_runs(lake: Lake, runs: Sequence[EvalRun]) -> int:
    """Append ``runs`` to the lake's ``eval_runs`` table in one commit; returns its new version."""
    pa = require("pyarrow")
    table = pa.Table.from_pylist([r.to_row() for r in runs], schema=S.EVAL_RUNS_SCHEMA)
    return lake.append(S.EVAL_RUNS, table.to_reader())


def load_runs(lake: Lake, run_ids: Iterable[str] | None = None, dataset: str | None = None) -> list[EvalRun]:
    """Stored runs, oldest first; ``run_ids`` may be unique prefixes.

    Raises
    ------
    DatasetError
        A requested id matches no run, or more than one.
    """
    if not lake.has_table(S.EVAL_RUNS):
        if run_ids:
            raise DatasetError(f"{lake.uri}: no evaluation runs stored yet; run `kbflow eval DATASET_DIR` first")
        return []
    where = f"{S.DATASET} = {sql_str(dataset)}" if dataset else None
    rows = lake.scan(S.EVAL_RUNS, where=where).to_pylist()
    runs = sorted((EvalRun.from_row(r) for r in rows), key=lambda r: r.created_at)
    if run_ids is None:
        return runs
    out = []
    for want in run_ids:
        found = [r for r in runs if r.run_id.startswith(want)]
        if len(found) != 1:
            known = ", ".join(r.run_id for r in runs[-5:]) or "none"
            what = "no run" if not found else f"{len(found)} runs"
            raise DatasetError(f"{lake.uri}: {what} with id {want!r} (latest: {known})")
        out.append(found[0])
    return out


@dataclass(frozen=True)
class QueryDelta:
    """One query's score under two runs, and each run's top documents."""

    query_id: str
    query: str
    a: float
    b: float
    top_a: list[str]
    top_b: list[str]
    relevant: dict[str, int]

    @property
    def delta(self) -> float:
        return self.a - self.b


def comparable(a: EvalRun, b: EvalRun, metric: str) -> None:
    """Raise :class:`DatasetError` unless ``a`` and ``b`` are runs of one dataset and split and ``metric`` is
    one ``kbflow eval`` reports (what :func:`compare` and :func:`kbflow.evaluate.paired.paired_runs` need)."""
    if metric not in METRICS:
        raise DatasetError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    if a.dataset != b.dataset or a.split != b.split:
        raise DatasetError(f"runs {a.run_id} and {b.run_id} are on different datasets ({a.dataset}, {b.dataset})")


def compare(
    a: EvalRun,
    b: EvalRun,
    queries: dict[str, str] | None = None,
    qrels: dict[str, dict[str, int]] | None = None,
    metric: str = "ndcg@10",
    n: int = 10,
) -> tuple[list[QueryDelta], list[QueryDelta]]:
    """The ``n`` queries where run ``a`` beats ``b`` most, and the ``n`` where it loses most.

    ``queries`` and ``qrels`` (from the dataset) add the query text and the
    relevant documents to each row.
    """
    comparable(a, b, metric)
    queries = queries or {}
    qrels = qrels or {}
    rows = [
        QueryDelta(
            q,
            queries.get(q, ""),
            a.per_query[q][metric],
            b.per_query.get(q, {}).get(metric, 0.0),
            a.top_docs.get(q, []),
            b.top_docs.get(q, []),
            {d: r for d, r in qrels.get(q, {}).items() if r > 0},
        )
        for q in sorted(a.per_query)
    ]
    wins = sorted((r for r in rows if r.delta > 0), key=lambda r: (-r.delta, r.query_id))[:n]
    losses = sorted((r for r in rows if r.delta < 0), key=lambda r: (r.delta, r.query_id))[:n]
    return wins, losses


#: :func:`compare` under the name ``kbflow`` exports it by
compare_runs = compare
