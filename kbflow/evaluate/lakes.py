"""A dataset's own lake: where it lives, its corpus ingested, and one tagged snapshot per ingest group.

:func:`ingest_dataset` ingests the dataset's corpus (``corpus.jsonl`` as one
``jsonl`` source, or the sources a folder names, such as a FinanceBench
folder's PDFs) into a lake under ``data/eval/<name>-<corpus hash>``
(:func:`eval_lake_uri`): an unchanged corpus is not read again on the next
run, and a chunk text already embedded by a model is never embedded again.
:func:`snapshot_lake` tags the lake once per ingest group
(:func:`~kbflow.evaluate.configs.group_key`), so each group is evaluated
against the snapshot it was built as.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kbflow import schema as S
from kbflow.config import Settings
from kbflow.config.env import env
from kbflow.errors import DatasetError
from kbflow.evaluate.configs import Group, ingest_groups, settings_for, slug
from kbflow.evaluate.dataset import BeirDataset
from kbflow.lake.lake import Lake
from kbflow.records import Source, ids

__all__ = ["dataset_sources", "eval_lake_uri", "group_tag", "ingest_dataset", "snapshot_lake"]

CORPUS_SOURCE = "corpus"


def eval_lake_uri(dataset: BeirDataset, home: str | None = None) -> str:
    """Where the dataset's lake lives: ``$KBFLOW_EVAL_HOME`` or ``./data/eval``, then ``<name>-<corpus hash>``."""
    home = home or env("KBFLOW_EVAL_HOME") or os.path.join(os.getcwd(), "data", "eval")
    return os.path.join(home, f"{dataset.name}-{dataset.corpus_hash[:12]}")


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
