"""Evaluate retrieval on a dataset: every judged query ranked under each configuration, scored with ranx.

:func:`evaluate` runs every judged query through :meth:`kbflow.Retriever.rank`
for each configuration (:mod:`kbflow.evaluate.configs`), turns the ranked
chunks into a ranking of judged documents (a document ranks where its best
chunk does; :func:`doc_id` says which document a chunk counts for: its
record, its page or its code symbol), scores it with ranx and returns one
:class:`EvalRun` per configuration, naming the search-table version it was
measured on. :func:`evaluate_dataset` first builds the dataset's lake
(:mod:`kbflow.evaluate.lakes`) as each configuration needs, then stores the
runs in the lake's ``eval_runs`` table.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.config import MAX_QUERY_CHARS, Settings
from kbflow.errors import DatasetError, QueryError
from kbflow.evaluate.configs import ingest_groups, rank_options, settings_for
from kbflow.evaluate.dataset import BeirDataset
from kbflow.evaluate.lakes import eval_lake_uri, ingest_dataset
from kbflow.evaluate.metrics import score_run
from kbflow.evaluate.runs import EvalRun
from kbflow.lake.lake import Lake

__all__ = [
    "DOCS_PER_QUERY",
    "as_run",
    "doc_id",
    "evaluate",
    "evaluate_dataset",
    "judged_docs",
    "ranked_docs",
    "ranking_k",
]

#: documents ranked per query (Recall@100 needs 100)
DOCS_PER_QUERY = 100


def doc_id(unit: str, source_id: str, locator: Mapping[str, Any]) -> str | None:
    """The judged document a chunk counts for: its record, its PDF page (a web page's or document's path), or its
    code symbol."""
    if unit == "record":
        return locator.get("record_id")
    if unit == "page":
        if locator.get("kind") in ("web", "doc"):
            return locator.get("path")
        return f"{locator.get('path')}#p{locator.get('page')}" if locator.get("page") else None
    return f"{source_id}/{locator.get('path')}::{locator.get('symbol') or ''}"


def judged_docs(retriever, unit: str = "record") -> dict[str, str]:
    """chunk id -> judged document id (:func:`doc_id`), for the pinned version."""
    table = retriever.dataset.to_table(columns=[S.CHUNK_ID, S.SOURCE_ID, S.LOCATOR])
    out = {}
    for cid, sid, loc in zip(
        table.column(S.CHUNK_ID).to_pylist(), table.column(S.SOURCE_ID).to_pylist(), table.column(S.LOCATOR).to_pylist()
    ):
        doc = doc_id(unit, sid, loc or {})
        if doc is not None:
            out[cid] = doc
    return out


def ranking_k(doc_of: Mapping[str, str]) -> int:
    """Chunks to rank per query so that :data:`DOCS_PER_QUERY` distinct documents usually come back."""
    from kbflow.retrieve.retriever import MAX_RANK_K

    return min(MAX_RANK_K, math.ceil(DOCS_PER_QUERY * len(doc_of) / max(1, len(set(doc_of.values())))))


def ranked_docs(chunk_ids: Iterable[str], doc_of: Mapping[str, str], n: int = DOCS_PER_QUERY) -> list[str]:
    """The first ``n`` distinct documents of a chunk ranking: a document ranks where its best chunk does."""
    docs: list[str] = []
    seen: set[str] = set()
    for cid in chunk_ids:
        doc = doc_of.get(cid)
        if doc is not None and doc not in seen:
            seen.add(doc)
            docs.append(doc)
            if len(docs) == n:
                break
    return docs


def as_run(docs: Sequence[str]) -> dict[str, float]:
    """A ranx run entry whose scores keep ``docs``' order exactly (ranx sorts by score)."""
    return {doc: float(len(docs) - i) for i, doc in enumerate(docs)}


def _percentile(values: Sequence[float], q: float) -> float:
    np = require("numpy")
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else 0.0


def evaluate(
    dataset: BeirDataset,
    lake: Lake,
    configs: Iterable[Mapping[str, Any]],
    settings: Settings,
    *,
    tag: str | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> list[EvalRun]:
    """Run every judged query (or the first ``limit``) under each configuration; one :class:`EvalRun` each.

    Configurations are dicts from :func:`config_for`; their retrieval keys
    apply at query time (their ``model`` and ``max_tokens`` must be what the
    lake was ingested with, see :func:`ingest_dataset`).
    """
    from kbflow.retrieve.retriever import Retriever

    retriever = Retriever.open(lake, tag=tag, settings=settings)
    by_backend = {settings.backend: retriever}
    doc_of = judged_docs(retriever, dataset.unit)
    if not doc_of:
        raise DatasetError(f"{lake.uri}: the search table holds no corpus records; was the corpus ingested?")
    k = ranking_k(doc_of)
    queries = list(dataset.queries.items())[: limit or None]
    runs = []
    for config in configs:
        backend = config.get("backend") or settings.backend
        if backend not in by_backend:  # the same vectors, queried on another backend
            by_backend[backend] = Retriever.open(lake, tag=tag, settings=replace(settings, backend=backend))
        retriever = by_backend[backend]
        run, top, latencies = _rank_queries(retriever, dataset, queries, config, k, doc_of, progress)
        qrels = {q: dataset.qrels[q] for q, _ in queries}
        means, per_query = score_run(qrels, run)
        runs.append(
            EvalRun(
                dataset=dataset.name,
                split=dataset.split,
                corpus_hash=dataset.corpus_hash,
                lake_version=retriever.version,
                lake_tag=tag,
                config=dict(config),
                metrics=means,
                latency_ms={"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95)},
                queries=len(queries),
                per_query=per_query,
                top_docs=top,
            )
        )
    return runs


def _rank_queries(
    retriever: Any,
    dataset: BeirDataset,
    queries: list[tuple[str, str]],
    config: Mapping[str, Any],
    k: int,
    doc_of: Mapping[str, str],
    progress: bool,
) -> tuple[dict[str, dict[str, float]], dict[str, list[str]], list[float]]:
    """Rank each query under ``config``: the run (document scores per query), each query's first 10 documents
    and the latencies in milliseconds."""
    run: dict[str, dict[str, float]] = {}
    top: dict[str, list[str]] = {}
    latencies: list[float] = []
    options = rank_options(config, k)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(queries), desc=f"eval {config['mode']}", unit="query", file=sys.stderr, leave=False)
    try:
        for qid, text in queries:
            t0 = time.perf_counter()
            try:
                ranking = retriever.rank(text[:MAX_QUERY_CHARS], k, **options)
            except QueryError as exc:
                raise DatasetError(f"{dataset.root}: query {qid!r}: {exc}") from None
            latencies.append((time.perf_counter() - t0) * 1000.0)
            docs = ranked_docs(ranking.ids, doc_of)
            run[qid] = as_run(docs)
            top[qid] = docs[:10]
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return run, top, latencies


def evaluate_dataset(
    dataset: BeirDataset,
    configs: Sequence[Mapping[str, Any]],
    settings: Settings,
    *,
    lake: str | None = None,
    tag: str | None = None,
    limit: int | None = None,
    progress: bool = False,
    save: bool = True,
    log: Callable[[str], None] | None = None,
) -> tuple[list[EvalRun], Lake]:
    """Ingest as each configuration needs, evaluate it, and store the runs in the lake's ``eval_runs``.

    Configurations are grouped by what they need at ingest time (model,
    chunk budget, context header, PDF tables); each group re-syncs the lake once (new chunk texts only are
    embedded) and is then evaluated at query time. With ``tag``, the tagged
    snapshot is evaluated as it is (nothing is ingested; configurations must
    match how it was built). ``log`` receives one line per ingest group
    (its status and how many chunks were embedded).
    """
    require("ranx")  # the metrics' package, before any ingest
    uri = lake or eval_lake_uri(dataset)
    base = replace(settings, lake=uri)
    runs: list[EvalRun] = []
    the_lake = Lake(uri)
    for key, group in ingest_groups(configs).items():
        group_settings = settings_for(base, group[0])
        if tag is None:
            the_lake, info = ingest_dataset(dataset, group_settings, progress=progress, tables=key[3])
            if log is not None:
                flags = ("" if key[2] else ", no context header") + ("" if key[3] else ", no tables")
                log(
                    f"{dataset.name}: {group_settings.model} at {group_settings.chunking.max_tokens} tokens{flags}: "
                    f"{info['status']}, {info['chunks_embedded']} chunks embedded, "
                    f"search version {info['versions'][S.SEARCH]}"
                )
        runs += evaluate(dataset, the_lake, group, group_settings, tag=tag, limit=limit, progress=progress)
    if save and runs:
        from kbflow.evaluate.runs import save_runs

        save_runs(the_lake, runs)
    return runs, the_lake
