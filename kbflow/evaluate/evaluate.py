"""Evaluate retrieval on a BEIR dataset: a lake of its own, every judged query, metrics per configuration.

:func:`prepare_lake` ingests the dataset's ``corpus.jsonl`` (one ``jsonl``
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

from kbflow import ids
from kbflow import schema as S
from kbflow._lazy import require
from kbflow.config import MAX_QUERY_CHARS, RetrievalSettings, Settings
from kbflow.errors import ConfigError, DatasetError, QueryError
from kbflow.evaluate.beir import BeirDataset
from kbflow.evaluate.metrics import score_run
from kbflow.evaluate.runs import EvalRun
from kbflow.lake.lake import Lake
from kbflow.records import Source

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
    "prepare_lake",
    "slug",
    "snapshot_lake",
]

CORPUS_SOURCE = "corpus"
#: documents ranked per query (Recall@100 needs 100)
DOCS_PER_QUERY = 100
#: the settings a configuration names; the retrieval keys apply at query time, the last two at ingest
RETRIEVAL_KEYS = ("mode", "fusion", "rrf_k", "dense_weight", "bm25_weight", "depth_factor", "reranker", "rerank_depth")
CONFIG_KEYS = (*RETRIEVAL_KEYS, "max_tokens", "model")


def slug(name: str) -> str:
    """A model path or id as a short name: its last path part, then only letters, digits, '.' and '-'."""
    last = os.path.basename(str(name).rstrip("/")) or str(name)
    return re.sub(r"[^A-Za-z0-9.]+", "-", last).strip("-") or "model"


def eval_lake_uri(dataset: BeirDataset, home: str | None = None) -> str:
    """Where the dataset's lake lives: ``$KBFLOW_EVAL_HOME`` or ``./data/eval``, then ``<name>-<corpus hash>``."""
    home = home or os.environ.get("KBFLOW_EVAL_HOME") or os.path.join(os.getcwd(), "data", "eval")
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
    config.update({k: v for k, v in overrides.items() if v is not None})
    RetrievalSettings(**{k: config[k] for k in RETRIEVAL_KEYS})  # validates
    if config["mode"] != "hybrid":  # fusion settings do not apply: keep configs comparable
        for key in ("fusion", "rrf_k", "dense_weight", "bm25_weight"):
            config[key] = None
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
    chunking = replace(base.chunking, max_tokens=int(config["max_tokens"]))
    if chunking.min_tokens >= chunking.max_tokens:
        chunking = replace(chunking, min_tokens=chunking.max_tokens // 4)
    return replace(base, model=str(config["model"]), chunking=chunking)


def prepare_lake(dataset: BeirDataset, settings: Settings, progress: bool = False) -> tuple[Lake, dict[str, Any]]:
    """Ingest the dataset's corpus into ``settings.lake`` (an unchanged corpus is not read again).

    Returns the lake and the ingest summary (``{"status", "chunks_embedded", "versions"}``).
    """
    from kbflow.pipeline import ingest

    lake = Lake(settings.lake)
    known = {s.source_id: s for s in lake.sources()}
    old = known.get(CORPUS_SOURCE)
    if old is None:
        lake.register(Source(CORPUS_SOURCE, "jsonl", dataset.corpus, title=dataset.name))
    elif old.uri != dataset.corpus:  # the same corpus bytes, moved: point the source at it
        lake.update_sources([Source(**{**old.__dict__, "uri": dataset.corpus}).to_row()])
    bar = None
    report = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(desc=f"embed {dataset.name}", unit="chunk", file=sys.stderr, leave=False)

        def report(done: int, total: int) -> None:
            bar.total = total
            bar.update(done)

    try:
        reports = ingest(lake, settings, [CORPUS_SOURCE], progress=report).sources
    finally:
        if bar is not None:
            bar.close()
    (rep,) = reports
    if rep.status == "failed":
        raise DatasetError(f"{dataset.corpus}: the corpus could not be ingested: {rep.error}")
    return lake, {"status": rep.status, "chunks_embedded": rep.chunks_embedded, "versions": lake.versions()}


def _doc_ids(retriever) -> dict[str, str]:
    """chunk id -> corpus document id (the record id in its locator), for the pinned version."""
    table = retriever.dataset.to_table(columns=[S.CHUNK_ID, S.LOCATOR])
    records = table.column(S.LOCATOR).combine_chunks().field("record_id").to_pylist()
    return {cid: rec for cid, rec in zip(table.column(S.CHUNK_ID).to_pylist(), records) if rec is not None}


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
    lake was ingested with, see :func:`prepare_lake`).
    """
    from kbflow.retrieve.retriever import MAX_RANK_K, Retriever

    retriever = Retriever.open(lake, tag=tag, settings=settings)
    doc_of = _doc_ids(retriever)
    if not doc_of:
        raise DatasetError(f"{lake.uri}: the search table holds no corpus records; was the corpus ingested?")
    chunks_per_doc = len(doc_of) / max(1, len(set(doc_of.values())))
    # enough chunks that DOCS_PER_QUERY distinct documents usually come back
    k = min(MAX_RANK_K, math.ceil(DOCS_PER_QUERY * chunks_per_doc))
    queries = list(dataset.queries.items())[: limit or None]
    runs = []
    for config in configs:
        run: dict[str, dict[str, float]] = {}
        top: dict[str, list[str]] = {}
        latencies: list[float] = []
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(queries), desc=f"eval {config['mode']}", unit="query", file=sys.stderr, leave=False)
        weights = None
        if config["mode"] == "hybrid":
            weights = {"dense": config["dense_weight"], "bm25": config["bm25_weight"]}
        for qid, text in queries:
            t0 = time.perf_counter()
            try:
                ranking = retriever.rank(
                    text[:MAX_QUERY_CHARS],
                    k,
                    mode=config["mode"],
                    fusion=config["fusion"],
                    rrf_k=config["rrf_k"],
                    weights=weights,
                    depth=int(config["depth_factor"]) * k,
                    reranker=config.get("reranker") or False,
                    rerank_depth=config.get("rerank_depth"),
                )
            except QueryError as exc:
                raise DatasetError(f"{dataset.root}: query {qid!r}: {exc}") from None
            latencies.append((time.perf_counter() - t0) * 1000.0)
            docs = ranked_docs(ranking.ids, doc_of)
            run[qid] = as_run(docs)
            top[qid] = docs[:10]
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
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


def group_key(config: Mapping[str, Any]) -> tuple[str, int]:
    """What a configuration needs at ingest time: ``(model, max_tokens)``."""
    return str(config["model"]), int(config["max_tokens"])


def ingest_groups(configs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], list[Mapping[str, Any]]]:
    """Configurations grouped by what they need at ingest time: ``{(model, max_tokens): [config, ...]}``."""
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for config in configs:
        groups.setdefault(group_key(config), []).append(config)
    return groups


def _tag_prefix(model: str, max_tokens: int) -> str:
    # the digest keeps two models of one folder name apart
    return f"eval-{slug(model)}-{ids.digest(model)[:6]}-t{int(max_tokens)}-v"


def group_tag(lake: Lake, model: str, max_tokens: int) -> str | None:
    """The newest snapshot :func:`snapshot_lake` tagged for ``(model, max_tokens)``, or ``None``."""
    prefix = _tag_prefix(model, max_tokens)
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
) -> dict[tuple[str, int], dict[str, Any]]:
    """Sync the dataset's lake once per ingest group of ``configs`` and tag the lake after each.

    The tag (``eval-<model>-<digest>-t<max_tokens>-v<search version>``) is the
    snapshot the group's configurations are evaluated against, whatever other
    groups write afterwards (``evaluate(..., tag=...)``). A group tagged before
    is not synced again: the lake is named by the corpus hash, so its snapshot
    still holds (delete the lake to rebuild it).
    Returns ``{(model, max_tokens): {"tag", "search_version", "status",
    "chunks_embedded"}}``.
    """
    base = replace(settings, lake=lake or eval_lake_uri(dataset))
    out: dict[tuple[str, int], dict[str, Any]] = {}
    the_lake = Lake(base.lake)
    for (model, max_tokens), group in ingest_groups(configs).items():
        tag = group_tag(the_lake, model, max_tokens) if the_lake.has_table(S.SEARCH) else None
        if tag is not None:  # the corpus is unchanged (its hash names the lake): the snapshot stands
            version = the_lake.snapshots()[tag][S.SEARCH]
            out[(model, max_tokens)] = {
                "tag": tag,
                "search_version": version,
                "status": "unchanged",
                "chunks_embedded": 0,
            }
            continue
        the_lake, info = prepare_lake(dataset, settings_for(base, group[0]), progress=progress)
        version = info["versions"][S.SEARCH]
        tag = f"{_tag_prefix(model, max_tokens)}{version}"
        if tag not in the_lake.snapshots():
            the_lake.tag(tag)
        out[(model, max_tokens)] = {
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

    Configurations are grouped by what they need at ingest time (model and
    chunk budget); each group re-syncs the lake once (new chunk texts only are
    embedded) and is then evaluated at query time. With ``tag``, the tagged
    snapshot is evaluated as it is (nothing is ingested; configurations must
    match how it was built). ``log`` receives one line per ingest group
    (its status and how many chunks were embedded).
    """
    uri = lake or eval_lake_uri(dataset)
    base = replace(settings, lake=uri)
    runs: list[EvalRun] = []
    the_lake = Lake(uri)
    for group in ingest_groups(configs).values():
        group_settings = settings_for(base, group[0])
        if tag is None:
            the_lake, info = prepare_lake(dataset, group_settings, progress=progress)
            if log is not None:
                log(
                    f"{dataset.name}: {group_settings.model} at {group_settings.chunking.max_tokens} tokens: "
                    f"{info['status']}, {info['chunks_embedded']} chunks embedded, "
                    f"search version {info['versions'][S.SEARCH]}"
                )
        runs += evaluate(dataset, the_lake, group, group_settings, tag=tag, limit=limit, progress=progress)
    if save and runs:
        from kbflow.evaluate.runs import save_runs

        save_runs(the_lake, runs)
    return runs, the_lake
