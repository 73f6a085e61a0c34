"""Evaluate retrieval on a BEIR dataset: a lake of its own, every judged query, metrics per configuration.

:func:`ingest_dataset` ingests the dataset's ``corpus.jsonl`` (one ``jsonl``
source) into a lake under ``data/eval/<name>-<corpus hash>``: an unchanged
corpus is not read again on the next run, and a chunk text already embedded
by a model is never embedded again. :func:`evaluate` runs every judged query
through :meth:`kbflow.Retriever.rank` for each configuration, turns the ranked
chunks into a ranking of corpus documents (a document ranks where its best
chunk does), scores it with ranx and returns one :class:`EvalRun` per
configuration, naming the search-table version it was measured on.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kbflow import schema as S
from kbflow._lazy import require
from kbflow.config import MAX_QUERY_CHARS, RetrievalSettings, Settings
from kbflow.config.env import env
from kbflow.errors import ConfigError, DatasetError, QueryError
from kbflow.evaluate.beir import BeirDataset
from kbflow.evaluate.metrics import score_run
from kbflow.evaluate.runs import EvalRun
from kbflow.lake.lake import Lake
from kbflow.records import Source, ids

__all__ = [
    "CONFIG_KEYS",
    "RETRIEVAL_KEYS",
    "config_for",
    "eval_lake_uri",
    "evaluate",
    "evaluate_dataset",
    "group_key",
    "group_tag",
    "ingest_groups",
    "ingest_dataset",
    "slug",
    "snapshot_lake",
]

CORPUS_SOURCE = "corpus"
#: documents ranked per query (Recall@100 needs 100)
DOCS_PER_QUERY = 100
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


def eval_lake_uri(dataset: BeirDataset, home: str | None = None) -> str:
    """Where the dataset's lake lives: ``$KBFLOW_EVAL_HOME`` or ``./data/eval``, then ``<name>-<corpus hash>``."""
    home = home or env("KBFLOW_EVAL_HOME") or os.path.join(os.getcwd(), "data", "eval")
    return os.path.join(home, f"{dataset.name}-{dataset.corpus_hash[:12]}")


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


def _register(lake: Lake, source_id: str, source_type: str, uri: str, title: str, options: dict[str, Any]) -> None:
    """Register a dataset's source; a source moved (same id and type, new path) or re-optioned is updated."""
    old = {s.source_id: s for s in lake.sources()}.get(source_id)
    if old is None:
        lake.register(Source(source_id, source_type, uri, title=title, options=options))
    elif old.uri != uri or dict(old.options) != options:
        lake.update_sources([Source(**{**old.__dict__, "uri": uri, "options": options}).to_row()])


def dataset_sources(dataset: BeirDataset, tables: bool = True) -> list[tuple[str, str, str, dict[str, Any]]]:
    """``(source id, type, uri, options)`` of every source the dataset's corpus is made of."""
    if dataset.corpus is not None:
        return [(CORPUS_SOURCE, "jsonl", dataset.corpus, {})]
    out = []
    for s in dataset.sources:
        options = dict(s["options"])
        if s["type"] == "pdf" and not tables:
            options["tables"] = False
        out.append((s["id"], s["type"], s["path"], options))
    return out


def ingest_dataset(
    dataset: BeirDataset, settings: Settings, progress: bool = False, tables: bool = True
) -> tuple[Lake, dict[str, Any]]:
    """Ingest the dataset's corpus into ``settings.lake`` (an unchanged corpus is not read again).

    Returns the lake and the ingest summary (``{"status", "chunks_embedded", "versions"}``).
    """
    from kbflow.pipeline import ingest

    lake = Lake(settings.lake)
    sources = dataset_sources(dataset, tables)
    for source_id, source_type, uri, options in sources:
        _register(lake, source_id, source_type, uri, dataset.name, options)
    bar = None
    report = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(desc=f"embed {dataset.name}", unit="chunk", file=sys.stderr, leave=False)

        def report(done: int, total: int) -> None:
            bar.total = total
            bar.update(done)

    try:
        reports = ingest(lake, settings, [s[0] for s in sources], progress=report).sources
    finally:
        if bar is not None:
            bar.close()
    failed = [r for r in reports if r.status == "failed"]
    if failed:
        raise DatasetError(
            f"{dataset.root}: the corpus could not be ingested: {failed[0].source_id}: {failed[0].error}"
        )
    statuses = {r.status for r in reports}
    status = "unchanged" if statuses == {"unchanged"} else "new" if statuses == {"new"} else "updated"
    embedded = sum(r.chunks_embedded for r in reports)
    return lake, {"status": status, "chunks_embedded": embedded, "versions": lake.versions()}


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
        "glossary": config.get("glossary") or "none",
        "distinct": False,  # every judged document counts, copies included, as BEIR scores them
    }


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


def _tag_prefix(model: str, max_tokens: int, context: bool = True, tables: bool = True) -> str:
    # the digest keeps two models of one folder name apart
    flags = ("" if context else "-nocx") + ("" if tables else "-notab")
    return f"eval-{slug(model)}-{ids.digest(model)[:6]}-t{int(max_tokens)}{flags}-v"


def group_tag(lake: Lake, model: str, max_tokens: int, context: bool = True, tables: bool = True) -> str | None:
    """The newest snapshot :func:`snapshot_lake` tagged for one ingest group, or ``None``."""
    prefix = _tag_prefix(model, max_tokens, context, tables)
    found = [
        (int(tag[len(prefix) :]), tag)
        for tag in lake.snapshots()
        if tag.startswith(prefix) and tag[len(prefix) :].isdigit()
    ]
    return max(found)[1] if found else None


def snapshot_lake(
    dataset: BeirDataset,
    configs: Sequence[Mapping[str, Any]],
    settings: Settings,
    *,
    lake: str | None = None,
    progress: bool = False,
) -> dict[Group, dict[str, Any]]:
    """Sync the dataset's lake once per ingest group of ``configs`` and tag the lake after each.

    The tag (``eval-<model>-<digest>-t<max_tokens>-v<search version>``) is the
    snapshot the group's configurations are evaluated against, whatever other
    groups write afterwards (``evaluate(..., tag=...)``). A group tagged before
    is not synced again: the lake is named by the corpus hash, so its snapshot
    still holds (delete the lake to rebuild it).
    Returns ``{group: {"tag", "search_version", "status", "chunks_embedded"}}``
    (groups as :func:`group_key` gives them).
    """
    base = replace(settings, lake=lake or eval_lake_uri(dataset))
    out: dict[Group, dict[str, Any]] = {}
    the_lake = Lake(base.lake)
    for key, group in ingest_groups(configs).items():
        tag = group_tag(the_lake, *key) if the_lake.has_table(S.SEARCH) else None
        if tag is not None:  # the corpus is unchanged (its hash names the lake): the snapshot stands
            version = the_lake.snapshots()[tag][S.SEARCH]
            out[key] = {
                "tag": tag,
                "search_version": version,
                "status": "unchanged",
                "chunks_embedded": 0,
            }
            continue
        the_lake, info = ingest_dataset(dataset, settings_for(base, group[0]), progress=progress, tables=key[3])
        version = info["versions"][S.SEARCH]
        tag = f"{_tag_prefix(*key)}{version}"
        if tag not in the_lake.snapshots():
            the_lake.tag(tag)
        out[key] = {
            "tag": tag,
            "search_version": version,
            "status": info["status"],
            "chunks_embedded": info["chunks_embedded"],
        }
    return out


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
